package eventstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/roadevents/roadevents/shared/event"
)

// sealedTokenPrefix marks a reporter token kept as its keyed hash. A token never holds "="
// (event.TokenPattern), so a sealed one cannot be taken for a token sent as it is; and it is
// above '#', which a reporter identity in a sort key must not hold (standingVote).
const sealedTokenPrefix = "="

// sealToken returns the form a reporter token is kept in (docs/privacy.md §2): sealedTokenPrefix
// and the hex HMAC-SHA256, under a key derived from the id key, of the organisation and the
// token, cut to 128 bits. A reporter_token is a stable vehicle identifier: it is never at rest
// as sent, and one organisation's token says nothing about another's. nil stays nil, and a
// sealed token stays as it is.
func (s *Store) sealToken(org string, token *string) *string {
	if token == nil || strings.HasPrefix(*token, sealedTokenPrefix) {
		return token
	}
	m := hmac.New(sha256.New, s.reporterKey)
	m.Write([]byte(org))
	m.Write([]byte{'/'})
	m.Write([]byte(*token))
	sealed := sealedTokenPrefix + hex.EncodeToString(m.Sum(nil)[:16])
	return &sealed
}

// reporter is the identity of the caller's reporter (event.Reporter) with the token sealed:
// the key of its vote and the reporter of its history entries. legacy is the identity versions
// before kept, with the token as sent, under which a vote on an event of theirs may stand; ""
// without a token.
func (s *Store) reporter(org string, token *string) (sealed, legacy string) {
	if token == nil {
		return event.Reporter(org, nil), ""
	}
	return event.Reporter(org, s.sealToken(org, token)), event.Reporter(org, token)
}

// reporterKeyOf derives the key of sealToken from the id key, so that the two uses of the
// deployment's key never share a key.
func reporterKeyOf(idKey []byte) []byte {
	m := hmac.New(sha256.New, idKey)
	m.Write([]byte("roadevents reporter tokens"))
	return m.Sum(nil)
}
