package dynamodb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/dynamodb/faulttest"
)

// shortAttempts keeps the tests of hung calls short; the service runs the defaults.
var shortAttempts = dynamodb.Options{AttemptTimeout: 100 * time.Millisecond}

// faultTable is a table behind a fault injector for faults of kind: with hang's options for a
// hang, else with attempts that wait for a slow DynamoDB Local.
func faultTable(t *testing.T, kind faulttest.Kind, hang dynamodb.Options) faulttest.Table {
	if kind == faulttest.Hang {
		return faulttest.NewTable(t, hang)
	}
	return faulttest.NewTable(t, dynamodb.Options{})
}

// transient are the faults the adapter retries and, when they last, reports as
// store.ErrUnavailable (docs/operations.md §1).
var transient = []faulttest.Kind{
	faulttest.Throttle, faulttest.RequestThrottle, faulttest.InternalError, faulttest.ServiceUnavailable,
	faulttest.Hang, faulttest.ResetBefore, faulttest.ResetAfter,
}

func item(sk string) store.Item {
	return store.Item{store.AttrPK: "faults", store.AttrSK: sk, "v": "x"}
}

// TestLastingFaultIsUnavailable: a call that fails every attempt is tried DefaultMaxAttempts
// times, then fails with store.ErrUnavailable, whatever the fault, reads and writes alike
// (docs/operations.md §1).
func TestLastingFaultIsUnavailable(t *testing.T) {
	t.Parallel()
	for _, kind := range transient {
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			tab := faultTable(t, kind, shortAttempts) // a hung attempt never reaches DynamoDB Local
			ctx := t.Context()
			tab.Faults.Set(faulttest.Fault{Kind: kind})
			calls := map[string]func() error{
				"Get": func() error { _, err := tab.Get(ctx, item("a").Key()); return err },
				"Put": func() error { return tab.Put(ctx, item("a"), store.IfNotExists()) },
				"Query": func() error {
					_, err := tab.Query(ctx, store.Query{PK: "faults"})
					return err
				},
				"TransactWrite": func() error {
					return tab.TransactWrite(ctx, []store.Op{store.PutOp(item("b"), store.IfNotExists())})
				},
			}
			for name, f := range calls {
				before := tab.Faults.Injected()
				if err := f(); !errors.Is(err, store.ErrUnavailable) {
					t.Errorf("%s under %s = %v; want store.ErrUnavailable", name, kind, err)
				}
				if n := tab.Faults.Injected() - before; n != dynamodb.DefaultMaxAttempts {
					t.Errorf("%s under %s: %d attempts; want %d", name, kind, n, dynamodb.DefaultMaxAttempts)
				}
			}
		})
	}
}

// TestPassingFaultIsRetried: a fault on one attempt is retried away and the call succeeds.
func TestPassingFaultIsRetried(t *testing.T) {
	t.Parallel()
	for _, kind := range transient {
		if kind == faulttest.ResetAfter {
			continue // the write's own first attempt makes its condition fail: next test
		}
		t.Run(kind.String(), func(t *testing.T) {
			t.Parallel()
			// The attempt after the hung one must have time to reach a loaded DynamoDB Local.
			tab := faultTable(t, kind, dynamodb.Options{AttemptTimeout: 3 * time.Second})
			ctx := t.Context()
			tab.Faults.Set(faulttest.Fault{Kind: kind, Times: 1})
			if err := tab.Put(ctx, item("a"), store.IfNotExists()); err != nil {
				t.Fatalf("Put with one %s = %v; want nil", kind, err)
			}
			if _, err := tab.Get(ctx, item("a").Key()); err != nil {
				t.Errorf("Get after the Put = %v; want the item", err)
			}
		})
	}
}

// TestWriteAppliedButAnswerLost: when DynamoDB carried out a conditional write whose answer
// the connection lost, the SDK's retry finds the condition failing on the write's own result.
// A single-item write must then report neither success nor a refusal, which a caller would
// act on (a "duplicate", a "code already used"), but store.ErrUnavailable: its outcome is
// unknown. A transaction, retried with the same idempotency token, gets its first attempt's
// success (docs/operations.md §1).
func TestWriteAppliedButAnswerLost(t *testing.T) {
	t.Parallel()
	tab := faulttest.NewTable(t, dynamodb.Options{})
	ctx := t.Context()
	lose := func(op string) {
		tab.Faults.Set(faulttest.Fault{Kind: faulttest.ResetAfter, Ops: []string{op}, Times: 1})
	}

	lose("PutItem")
	if err := tab.Put(ctx, item("put"), store.IfNotExists()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Put(if not exists) whose answer was lost = %v; want store.ErrUnavailable", err)
	}
	if _, err := tab.Get(ctx, item("put").Key()); err != nil {
		t.Errorf("Get after the lost answer = %v; want the item the Put wrote", err)
	}

	lose("UpdateItem")
	_, err := tab.Update(ctx, item("put").Key(), store.Update{Set: map[string]any{"v": "y"}}, store.IfEqual("v", "x"))
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Update(if v = x) whose answer was lost = %v; want store.ErrUnavailable", err)
	}

	lose("DeleteItem")
	if err := tab.Delete(ctx, item("put").Key(), store.IfExists()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Delete(if exists) whose answer was lost = %v; want store.ErrUnavailable", err)
	}

	lose("TransactWriteItems")
	if err := tab.TransactWrite(ctx, []store.Op{store.PutOp(item("tx"), store.IfNotExists())}); err != nil {
		t.Errorf("TransactWrite(put if not exists) whose answer was lost = %v; want nil (the retry's token replays it)", err)
	}
	if _, err := tab.Get(ctx, item("tx").Key()); err != nil {
		t.Errorf("Get after the transaction = %v; want its item", err)
	}
}

// TestHungCallGivesUp: a DynamoDB that never answers is given up on after DefaultMaxAttempts
// attempts of AttemptTimeout each, not when the caller's context ends, and a caller's own
// deadline ends the call sooner, also as store.ErrUnavailable.
func TestHungCallGivesUp(t *testing.T) {
	t.Parallel()
	tab := faulttest.NewTable(t, shortAttempts)
	tab.Faults.Set(faulttest.Fault{Kind: faulttest.Hang})
	start := time.Now()
	_, err := tab.Get(t.Context(), item("a").Key())
	elapsed := time.Since(start)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get on a hung DynamoDB = %v; want store.ErrUnavailable", err)
	}
	// Three attempts of 100 ms and two backoffs of at most 50 and 100 ms, with room for a
	// loaded machine.
	if least := dynamodb.DefaultMaxAttempts * shortAttempts.AttemptTimeout; elapsed < least || elapsed > least+2*time.Second {
		t.Errorf("Get on a hung DynamoDB gave up after %s; want about %s", elapsed, least)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if _, err := tab.Get(ctx, item("a").Key()); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Get past the caller's deadline = %v; want store.ErrUnavailable", err)
	}
}

// TestBatchGetThrottledGivesUp: a BatchGet whose keys DynamoDB keeps leaving unprocessed (all
// throttled) fails with store.ErrUnavailable instead of waiting for capacity without end.
func TestBatchGetThrottledGivesUp(t *testing.T) {
	t.Parallel()
	tab := faulttest.NewTable(t, dynamodb.Options{})
	ctx := t.Context()
	if err := tab.Put(ctx, item("a"), store.Condition{}); err != nil {
		t.Fatal(err)
	}
	tab.Faults.Set(faulttest.Fault{Kind: faulttest.Unprocessed})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := tab.BatchGet(ctx, []store.Key{item("a").Key()}); !errors.Is(err, store.ErrUnavailable) || ctx.Err() != nil {
		t.Errorf("BatchGet with every key left unprocessed = %v (context %v); want store.ErrUnavailable before the deadline", err, ctx.Err())
	}
	tab.Faults.Clear()
	if got, err := tab.BatchGet(ctx, []store.Key{item("a").Key()}); err != nil || len(got) != 1 {
		t.Errorf("BatchGet once DynamoDB answers = %v, %v; want the item", got, err)
	}
}
