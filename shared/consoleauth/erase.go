package consoleauth

import (
	"context"
	"fmt"

	"github.com/roadevents/roadevents/shared/ratelimit"
	"github.com/roadevents/roadevents/shared/store"
)

// Erase removes the account userID and everything this package keeps under its address or id
// (docs/privacy.md §6): it first ends every session and temp token (Logout), then removes the
// pending sign-in code, the code-request and TOTP-attempt windows, the partition of the
// address (its index to the account, and what other packages filed there, read by them
// before), and last the account's partition: the account, its recovery codes and its list of
// sessions. The session items themselves hold only the account's id and a hash, and stop
// opening anything at once; they go at their expiry. An interrupted erasure leaves the account
// in place, signed out, and is finished by erasing again.
func (s *Service) Erase(ctx context.Context, userID string) error {
	a, err := s.getAccount(ctx, userID)
	if err != nil {
		return err
	}
	if err := s.Logout(ctx, userID); err != nil {
		return err
	}
	now := s.clock.Now()
	if err := s.table.Delete(ctx, codeKey(a.Email), store.Condition{}); err != nil {
		return fmt.Errorf("consoleauth: erase the pending code of %s: %w", userID, err)
	}
	if err := s.codeCap.Forget(ctx, ratelimit.AddressSubject(a.Email), now); err != nil {
		return err
	}
	if err := s.totpCap.Forget(ctx, userID, now); err != nil {
		return err
	}
	if err := s.deletePartition(ctx, emailKey(a.Email).PK, ""); err != nil {
		return err
	}
	// The account item last: until it goes, erasing again finds the address to finish with.
	if err := s.deletePartition(ctx, pkUser+userID, skUser); err != nil {
		return err
	}
	if err := s.table.Delete(ctx, userKey(userID), store.Condition{}); err != nil {
		return fmt.Errorf("consoleauth: erase account %s: %w", userID, err)
	}
	return nil
}

// deletePartition deletes every item of partition pk but the one with sort key keep, as many
// in one transaction as the store takes.
func (s *Service) deletePartition(ctx context.Context, pk, keep string) error {
	items, err := s.table.Query(ctx, store.Query{PK: pk})
	if err != nil {
		return fmt.Errorf("consoleauth: read a partition to erase: %w", err)
	}
	keys := make([]store.Key, 0, len(items))
	for _, it := range items {
		if k := it.Key(); k.SK != keep {
			keys = append(keys, k)
		}
	}
	if err := store.DeleteKeys(ctx, s.table, keys); err != nil {
		return fmt.Errorf("consoleauth: erase the items of an account: %w", err)
	}
	return nil
}
