// Package dynamodb is the store.Table adapter for Amazon DynamoDB (docs/architecture.md §2),
// and the store.Feed read from the table's DynamoDB Stream. It is held to the same conformance
// suite (store/storetest) as the embedded adapter: a behaviour difference is a bug.
//
// DynamoDB deletes items past their TTL lazily, up to days later, so this adapter hides them
// itself: reads drop them, and every condition expression treats them as absent.
//
// Every call has the adapter's own retries and a deadline per attempt (calls.go), and a call
// DynamoDB does not carry out in time is store.ErrUnavailable (docs/operations.md §1).
package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
)

// Options configures a Table.
type Options struct {
	// Clock decides which items are past their TTL; clock.System when nil.
	Clock clock.Clock
	// MaxAttempts is how often one call is tried before it fails: DefaultMaxAttempts when 0.
	MaxAttempts int
	// AttemptTimeout bounds each attempt: DefaultAttemptTimeout when 0.
	AttemptTimeout time.Duration
	// BaseDelay scales the waits between attempts: DefaultBaseDelay when 0.
	BaseDelay time.Duration
}

// Table is a store.Table on one DynamoDB table whose key schema is pk (S, HASH) and sk (S,
// RANGE), as CreateTable makes it.
type Table struct {
	client *ddb.Client
	name   string
	clock  clock.Clock
	// retryer and attemptTimeout are the policy of every call (calls.go); one retryer per
	// table, so that its retry quota sees all of the table's calls.
	retryer        aws.Retryer
	attemptTimeout time.Duration
}

var _ store.Table = (*Table)(nil)

// maxRaceRetries bounds how often an update retries when an expired item it had to replace
// changed under it; past that the caller gets store.ErrConflict and may retry.
const maxRaceRetries = 5

// New returns the adapter for table on client. Its calls follow the adapter's retries and
// timeouts (Options), not the client's.
func New(client *ddb.Client, table string, opts Options) *Table {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.AttemptTimeout <= 0 {
		opts.AttemptTimeout = DefaultAttemptTimeout
	}
	if opts.BaseDelay <= 0 {
		opts.BaseDelay = DefaultBaseDelay
	}
	return &Table{client: client, name: table, clock: opts.Clock,
		retryer: newRetryer(opts.MaxAttempts, opts.BaseDelay), attemptTimeout: opts.AttemptTimeout}
}

func (t *Table) now() int64 { return t.clock.Now().Unix() }

// Get implements store.Table.
func (t *Table) Get(ctx context.Context, k store.Key) (store.Item, error) {
	if err := store.ValidateKey(k); err != nil {
		return nil, fmt.Errorf("get %s: %w", k, err)
	}
	it, err := t.getRaw(ctx, k)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", k, err)
	}
	if it == nil || it.ExpiredAt(t.now()) {
		return nil, fmt.Errorf("get %s: %w", k, store.ErrNotFound)
	}
	return it, nil
}

// getRaw reads the stored item, expired or not; nil when there is none.
func (t *Table) getRaw(ctx context.Context, k store.Key) (store.Item, error) {
	out, err := call(ctx, t, readCall, t.client.GetItem, &ddb.GetItemInput{
		TableName:      aws.String(t.name),
		Key:            marshalKey(k),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, err
	}
	return unmarshalItem(out.Item)
}

// Put implements store.Table.
func (t *Table) Put(ctx context.Context, item store.Item, cond store.Condition) error {
	in, err := t.putInput(item, cond)
	if err != nil {
		return fmt.Errorf("put %s: %w", item.Key(), err)
	}
	if _, err := call(ctx, t, writeCall, t.client.PutItem, in); err != nil {
		return fmt.Errorf("put %s: %w", item.Key(), err)
	}
	return nil
}

func (t *Table) putInput(item store.Item, cond store.Condition) (*ddb.PutItemInput, error) {
	norm, err := store.Normalize(item)
	if err != nil {
		return nil, err
	}
	av, err := marshalItem(norm)
	if err != nil {
		return nil, err
	}
	b := newExprBuilder(t.now())
	ce, err := b.condition(cond)
	if err != nil {
		return nil, err
	}
	return &ddb.PutItemInput{
		TableName:                 aws.String(t.name),
		Item:                      av,
		ConditionExpression:       optional(ce),
		ExpressionAttributeNames:  b.Names(),
		ExpressionAttributeValues: b.Values(),
	}, nil
}

// Delete implements store.Table.
func (t *Table) Delete(ctx context.Context, k store.Key, cond store.Condition) error {
	in, err := t.deleteInput(k, cond)
	if err != nil {
		return fmt.Errorf("delete %s: %w", k, err)
	}
	if _, err := call(ctx, t, writeCall, t.client.DeleteItem, in); err != nil {
		return fmt.Errorf("delete %s: %w", k, err)
	}
	return nil
}

func (t *Table) deleteInput(k store.Key, cond store.Condition) (*ddb.DeleteItemInput, error) {
	if err := store.ValidateKey(k); err != nil {
		return nil, err
	}
	b := newExprBuilder(t.now())
	ce, err := b.condition(cond)
	if err != nil {
		return nil, err
	}
	return &ddb.DeleteItemInput{
		TableName:                 aws.String(t.name),
		Key:                       marshalKey(k),
		ConditionExpression:       optional(ce),
		ExpressionAttributeNames:  b.Names(),
		ExpressionAttributeValues: b.Values(),
	}, nil
}

// Update implements store.Table.
//
// UpdateItem merges into whatever is stored, including an item past its TTL that DynamoDB has
// not deleted yet, while the contract says that item is absent. So the update is guarded to
// apply only to a live item or none; when the guard finds an expired item, that item is
// replaced by the one the update creates from nothing, with a put guarded to replace only an
// expired item.
func (t *Table) Update(ctx context.Context, k store.Key, u store.Update, cond store.Condition) (store.Item, error) {
	if err := store.ValidateKey(k); err != nil {
		return nil, fmt.Errorf("update %s: %w", k, err)
	}
	for range maxRaceRetries {
		in, err := t.updateInput(k, u, cond)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", k, err)
		}
		in.ReturnValues = types.ReturnValueAllNew
		out, err := call(ctx, t, writeCall, t.client.UpdateItem, in)
		if err == nil {
			it, err := unmarshalItem(out.Attributes)
			if err != nil {
				return nil, fmt.Errorf("update %s: %w", k, err)
			}
			return it, nil
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			return nil, fmt.Errorf("update %s: %w", k, err)
		}
		// The condition, or the guard, failed: find out which on the item as it is now.
		fresh, retry, err := t.afterUpdateRefused(ctx, k, u, cond)
		switch {
		case err != nil:
			return nil, fmt.Errorf("update %s: %w", k, err)
		case retry:
			continue
		}
		put, err := t.replaceExpiredInput(fresh)
		if err != nil {
			return nil, fmt.Errorf("update %s: %w", k, err)
		}
		if _, err := call(ctx, t, writeCall, t.client.PutItem, put); err != nil {
			if errors.Is(err, store.ErrConditionFailed) {
				continue // the expired item changed meanwhile: start over
			}
			return nil, fmt.Errorf("update %s: %w", k, err)
		}
		return fresh, nil
	}
	return nil, fmt.Errorf("update %s: expired item kept changing: %w", k, store.ErrConflict)
}

func (t *Table) updateInput(k store.Key, u store.Update, cond store.Condition) (*ddb.UpdateItemInput, error) {
	b := newExprBuilder(t.now())
	ue, err := b.update(u)
	if err != nil {
		return nil, err
	}
	ce, err := b.condition(cond)
	if err != nil {
		return nil, err
	}
	return &ddb.UpdateItemInput{
		TableName:                 aws.String(t.name),
		Key:                       marshalKey(k),
		UpdateExpression:          optional(ue),
		ConditionExpression:       aws.String(both(b.notExpired(), ce)),
		ExpressionAttributeNames:  b.Names(),
		ExpressionAttributeValues: b.Values(),
	}, nil
}

// afterUpdateRefused reads the item an update was refused on. For an expired item whose
// absence satisfies cond it returns the item the update creates instead. retry says the item
// changed since (so the update may now pass); otherwise the error is the condition failure.
func (t *Table) afterUpdateRefused(ctx context.Context, k store.Key, u store.Update, cond store.Condition) (fresh store.Item, retry bool, err error) {
	cur, err := t.getRaw(ctx, k)
	if err != nil {
		return nil, false, err
	}
	if cur != nil && cur.ExpiredAt(t.now()) {
		if !cond.Eval(nil) {
			return nil, false, &store.ConditionError{Op: -1}
		}
		fresh, err := freshItem(k, u)
		return fresh, false, err
	}
	if !cond.Eval(cur) {
		return nil, false, &store.ConditionError{Op: -1}
	}
	return nil, true, nil
}

// replaceExpiredInput puts fresh over the stored item only while that item is expired.
func (t *Table) replaceExpiredInput(fresh store.Item) (*ddb.PutItemInput, error) {
	av, err := marshalItem(fresh)
	if err != nil {
		return nil, err
	}
	b := newExprBuilder(t.now())
	return &ddb.PutItemInput{
		TableName:                 aws.String(t.name),
		Item:                      av,
		ConditionExpression:       aws.String(b.expired()),
		ExpressionAttributeNames:  b.Names(),
		ExpressionAttributeValues: b.Values(),
	}, nil
}

// Query implements store.Table. DynamoDB applies Limit before it filters, and the filter here
// (TTL) runs in the adapter, so it pages until it has q.Limit live items or none are left.
func (t *Table) Query(ctx context.Context, q store.Query) ([]store.Item, error) {
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("query %q: %w", q.PK, err)
	}
	b := newExprBuilder(0)
	str := func(s string) string { return b.value(&types.AttributeValueMemberS{Value: s}) }
	kce := b.name(store.AttrPK) + " = " + str(q.PK)
	switch {
	case q.Prefix != "":
		kce += " AND begins_with(" + b.name(store.AttrSK) + ", " + str(q.Prefix) + ")"
	case q.From != "" && q.To != "":
		kce += " AND " + b.name(store.AttrSK) + " BETWEEN " + str(q.From) + " AND " + str(q.To)
	case q.From != "":
		kce += " AND " + b.name(store.AttrSK) + " >= " + str(q.From)
	case q.To != "":
		kce += " AND " + b.name(store.AttrSK) + " <= " + str(q.To)
	}
	in := &ddb.QueryInput{
		TableName:                 aws.String(t.name),
		KeyConditionExpression:    aws.String(kce),
		ExpressionAttributeNames:  b.Names(),
		ExpressionAttributeValues: b.Values(),
		ConsistentRead:            aws.Bool(!q.Eventual),
		ScanIndexForward:          aws.Bool(!q.Desc),
	}
	now := t.now()
	var items []store.Item
	for {
		if q.Limit > 0 {
			in.Limit = aws.Int32(int32(min(q.Limit-len(items), 1<<20)))
		}
		out, err := call(ctx, t, readCall, t.client.Query, in)
		if err != nil {
			return nil, fmt.Errorf("query %q: %w", q.PK, err)
		}
		for _, raw := range out.Items {
			it, err := unmarshalItem(raw)
			if err != nil {
				return nil, fmt.Errorf("query %q: %w", q.PK, err)
			}
			if !it.ExpiredAt(now) {
				items = append(items, it)
			}
		}
		if len(out.LastEvaluatedKey) == 0 || (q.Limit > 0 && len(items) >= q.Limit) {
			return items, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// BatchGet implements store.Table: chunks of store.MaxBatchGet keys, unprocessed keys retried
// with backoff (DynamoDB returns them under throttling or past 16 MB) while rounds bring items,
// answers in the order of keys.
func (t *Table) BatchGet(ctx context.Context, keys []store.Key) ([]store.Item, error) {
	var unique []store.Key
	seen := make(map[store.Key]bool, len(keys))
	for _, k := range keys {
		if err := store.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("batch get: %w", err)
		}
		if !seen[k] {
			seen[k] = true
			unique = append(unique, k)
		}
	}
	found := make(map[store.Key]store.Item, len(unique))
	for start := 0; start < len(unique); start += store.MaxBatchGet {
		chunk := unique[start:min(start+store.MaxBatchGet, len(unique))]
		if err := t.batchGetChunk(ctx, chunk, found); err != nil {
			return nil, fmt.Errorf("batch get of %d keys from %s: %w", len(keys), chunk[0], err)
		}
	}
	now := t.now()
	items := make([]store.Item, 0, len(found))
	for _, k := range unique {
		if it, ok := found[k]; ok && !it.ExpiredAt(now) {
			items = append(items, it)
		}
	}
	return items, nil
}

// maxIdleRounds bounds the rounds of a BatchGet chunk in a row in which DynamoDB returned no
// item and left keys unprocessed (throttling): past it the call fails with
// store.ErrUnavailable rather than wait for capacity without end (docs/operations.md §1).
const maxIdleRounds = 5

func (t *Table) batchGetChunk(ctx context.Context, chunk []store.Key, found map[store.Key]store.Item) error {
	req := make([]map[string]types.AttributeValue, len(chunk))
	for i, k := range chunk {
		req[i] = marshalKey(k)
	}
	pending := map[string]types.KeysAndAttributes{
		t.name: {Keys: req, ConsistentRead: aws.Bool(true)},
	}
	backoff := 20 * time.Millisecond
	idle := 0
	for len(pending) > 0 && len(pending[t.name].Keys) > 0 {
		out, err := call(ctx, t, readCall, t.client.BatchGetItem, &ddb.BatchGetItemInput{RequestItems: pending})
		if err != nil {
			return err
		}
		for _, raw := range out.Responses[t.name] {
			it, err := unmarshalItem(raw)
			if err != nil {
				return err
			}
			found[it.Key()] = it
		}
		pending = out.UnprocessedKeys
		if len(pending) == 0 {
			break
		}
		if len(out.Responses[t.name]) > 0 {
			idle = 0
		} else if idle++; idle >= maxIdleRounds {
			return fmt.Errorf("%w: %d keys still unprocessed after %d rounds", store.ErrUnavailable, len(pending[t.name].Keys), idle)
		}
		if err := sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return nil
}

// Close implements store.Table; the SDK client holds nothing that needs releasing.
func (t *Table) Close() error { return nil }

// refusal turns the refusals the contract names into its sentinels, keeping the original in
// the chain for logs; ok is false for any other error.
func refusal(err error) (mapped error, ok bool) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &store.ConditionError{Op: -1}, true
	}
	var conflict *types.TransactionConflictException
	if errors.As(err, &conflict) {
		return fmt.Errorf("%w: %w", store.ErrConflict, err), true
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return fmt.Errorf("%w: %w", store.ErrInvalid, err), true
	}
	return nil, false
}

// optional returns nil for "", so that an absent expression is not sent as an empty one
// (which DynamoDB refuses).
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// sleep waits for d; a deadline of ctx that ends the wait is store.ErrUnavailable, as it is
// for a call.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", store.ErrUnavailable, ctx.Err())
		}
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
