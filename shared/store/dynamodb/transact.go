package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/roadevents/roadevents/shared/store"
)

// TransactWrite implements store.Table with TransactWriteItems. Requests DynamoDB would refuse
// as invalid (too many operations, two on one item, a bad key or item) are refused before the
// call with store.ErrInvalid. A refused transaction maps to *store.ConditionError naming the
// first operation whose condition failed, else store.ErrConflict when it collided with
// another write.
//
// An update of an item past its TTL is handled as Update does: the guarded update is refused,
// the operation becomes a put that replaces the expired item, and the transaction is retried.
//
// The SDK sends every attempt of one call with the same idempotency token
// (ClientRequestToken), so an attempt retried after DynamoDB carried out an earlier one whose
// answer was lost gets that success, never a refusal by its own writes (docs/operations.md §1).
func (t *Table) TransactWrite(ctx context.Context, ops []store.Op) error {
	if err := validateOps(ops); err != nil {
		return fmt.Errorf("transact write of %d operations: %w", len(ops), err)
	}
	replaced := map[int]store.Item{} // update operations turned into puts over an expired item
	for range maxRaceRetries {
		items, index, err := t.transactItems(ops, replaced)
		if err != nil {
			return fmt.Errorf("transact write of %d operations: %w", len(ops), err)
		}
		if len(items) == 0 {
			return nil // only checks that always hold
		}
		_, err = call(ctx, t, transactCall, t.client.TransactWriteItems, &ddb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var canceled *types.TransactionCanceledException
		if !errors.As(err, &canceled) {
			return fmt.Errorf("transact write of %d operations: %w", len(ops), err)
		}
		codes := cancellationCodes(canceled)
		failed := -1
		for i, code := range codes {
			if code == "ConditionalCheckFailed" && i < len(index) {
				failed = index[i]
				break
			}
		}
		if failed < 0 {
			return fmt.Errorf("transact write of %d operations: %w", len(ops), canceledError(codes, err))
		}
		op := ops[failed]
		if op.Kind != store.OpUpdate {
			return &store.ConditionError{Op: failed}
		}
		if _, ok := replaced[failed]; ok {
			delete(replaced, failed) // the expired item changed meanwhile: try the update again
			continue
		}
		fresh, retry, err := t.afterUpdateRefused(ctx, op.Key, op.Update, op.Cond)
		var cerr *store.ConditionError
		switch {
		case errors.As(err, &cerr):
			return &store.ConditionError{Op: failed}
		case err != nil:
			return fmt.Errorf("transact write of %d operations: operation %d on %s: %w", len(ops), failed, op.Key, err)
		case !retry:
			replaced[failed] = fresh
		}
	}
	return fmt.Errorf("transact write of %d operations: items kept changing: %w", len(ops), store.ErrConflict)
}

// validateOps checks what DynamoDB would refuse, so that the answer is store.ErrInvalid
// before any call.
func validateOps(ops []store.Op) error {
	if len(ops) > store.MaxTransactOps {
		return fmt.Errorf("%w: %d operations, over %d", store.ErrInvalid, len(ops), store.MaxTransactOps)
	}
	seen := make(map[store.Key]int, len(ops))
	for i, op := range ops {
		k := op.TargetKey()
		if err := store.ValidateKey(k); err != nil {
			return fmt.Errorf("operation %d: %w", i, err)
		}
		if j, ok := seen[k]; ok {
			return fmt.Errorf("%w: operations %d and %d both on %s", store.ErrInvalid, j, i, k)
		}
		seen[k] = i
		switch op.Kind {
		case store.OpPut, store.OpDelete, store.OpCheck:
		case store.OpUpdate:
			if err := validateUpdate(op.Update); err != nil {
				return fmt.Errorf("operation %d: %w", i, err)
			}
		default:
			return fmt.Errorf("%w: operation %d of unknown kind %d", store.ErrInvalid, i, op.Kind)
		}
	}
	return nil
}

// transactItems builds the request. index maps each request item to its operation: a check
// whose condition always holds is left out, as TransactWriteItems requires a condition on
// every ConditionCheck.
func (t *Table) transactItems(ops []store.Op, replaced map[int]store.Item) ([]types.TransactWriteItem, []int, error) {
	items := make([]types.TransactWriteItem, 0, len(ops))
	index := make([]int, 0, len(ops))
	table := aws.String(t.name)
	for i, op := range ops {
		var item types.TransactWriteItem
		switch op.Kind {
		case store.OpPut:
			in, err := t.putInput(op.Item, op.Cond)
			if err != nil {
				return nil, nil, fmt.Errorf("operation %d on %s: %w", i, op.Item.Key(), err)
			}
			item.Put = &types.Put{TableName: table, Item: in.Item, ConditionExpression: in.ConditionExpression,
				ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}
		case store.OpDelete:
			in, err := t.deleteInput(op.Key, op.Cond)
			if err != nil {
				return nil, nil, fmt.Errorf("operation %d on %s: %w", i, op.Key, err)
			}
			item.Delete = &types.Delete{TableName: table, Key: in.Key, ConditionExpression: in.ConditionExpression,
				ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}
		case store.OpUpdate:
			if fresh, ok := replaced[i]; ok {
				in, err := t.replaceExpiredInput(fresh)
				if err != nil {
					return nil, nil, fmt.Errorf("operation %d on %s: %w", i, op.Key, err)
				}
				item.Put = &types.Put{TableName: table, Item: in.Item, ConditionExpression: in.ConditionExpression,
					ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}
				break
			}
			in, err := t.updateInput(op.Key, op.Update, op.Cond)
			if err != nil {
				return nil, nil, fmt.Errorf("operation %d on %s: %w", i, op.Key, err)
			}
			if in.UpdateExpression == nil {
				// A transaction's Update needs an expression; removing an attribute the
				// contract never writes changes nothing but still creates the item.
				in.UpdateExpression = aws.String("REMOVE " + placeholderNoop)
				in.ExpressionAttributeNames[placeholderNoop] = noopAttr
			}
			item.Update = &types.Update{TableName: table, Key: in.Key, UpdateExpression: in.UpdateExpression,
				ConditionExpression: in.ConditionExpression, ExpressionAttributeNames: in.ExpressionAttributeNames,
				ExpressionAttributeValues: in.ExpressionAttributeValues}
		case store.OpCheck:
			in, err := t.deleteInput(op.Key, op.Cond)
			if err != nil {
				return nil, nil, fmt.Errorf("operation %d on %s: %w", i, op.Key, err)
			}
			if in.ConditionExpression == nil {
				continue
			}
			item.ConditionCheck = &types.ConditionCheck{TableName: table, Key: in.Key, ConditionExpression: in.ConditionExpression,
				ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues}
		}
		items = append(items, item)
		index = append(index, i)
	}
	return items, index, nil
}

// The attribute an empty update in a transaction removes; names starting with an underscore
// pair are the adapter's own.
const (
	placeholderNoop = "#noop"
	noopAttr        = "__roadevents_noop"
)

// reasonsInMessage finds the reason list in a TransactionCanceledException message, for
// servers that send it only there ("... specific reasons [None, ConditionalCheckFailed]").
var reasonsInMessage = regexp.MustCompile(`\[([A-Za-z, ]+)\]`)

// cancellationCodes returns the reason code of each request item, in request order.
func cancellationCodes(e *types.TransactionCanceledException) []string {
	if len(e.CancellationReasons) > 0 {
		codes := make([]string, len(e.CancellationReasons))
		for i, r := range e.CancellationReasons {
			codes[i] = aws.ToString(r.Code)
		}
		return codes
	}
	m := reasonsInMessage.FindStringSubmatch(aws.ToString(e.Message))
	if m == nil {
		return nil
	}
	codes := strings.Split(m[1], ",")
	for i := range codes {
		codes[i] = strings.TrimSpace(codes[i])
	}
	return codes
}

// canceledError maps a refusal that is no condition failure. A transaction refused because an
// item's partition was throttled is store.ErrUnavailable (docs/operations.md §1).
func canceledError(codes []string, err error) error {
	for _, code := range codes {
		if code == "TransactionConflict" {
			return fmt.Errorf("%w: %w", store.ErrConflict, err)
		}
	}
	for _, code := range codes {
		if code == "ValidationError" {
			return fmt.Errorf("%w: %w", store.ErrInvalid, err)
		}
	}
	for _, code := range codes {
		if code == "ThrottlingError" || code == "ProvisionedThroughputExceeded" {
			return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
		}
	}
	return err
}
