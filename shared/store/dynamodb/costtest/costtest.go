// Package costtest measures what DynamoDB bills for the calls the dynamodb adapter makes: the
// calls, and the read and write request units of each, for the tests that hold the service's
// operations to a cost budget (docs/operations.md §5, cost per million operations). It is
// imported by tests only.
//
// A Meter sits in the adapter's client as SDK middleware and asks DynamoDB Local for its
// consumed capacity on every call. DynamoDB Local reports it faithfully for single-item calls
// and queries, but not for transactions: it answers four units per kilobyte of the largest
// member, whatever the number of members. So the Meter computes every call's units itself, from
// the sizes of the items involved, by DynamoDB's published rules, and checks its figure against
// DynamoDB Local's wherever DynamoDB Local's is faithful (Mismatches):
//
//   - an item's size is the sum of its attribute names and values (a number takes one byte per
//     two significant digits and one more; a list three bytes and one per element);
//   - GetItem and each key of BatchGetItem: one unit per 4 KB of the item, rounded up, at least
//     one even for an absent item; Query: one unit per 4 KB of all the items of the page, at
//     least one; half of that for an eventually consistent read;
//   - PutItem, UpdateItem and DeleteItem: one unit per 1 KB of the larger of the item before and
//     after, rounded up, at least one;
//   - TransactWriteItems: two units per 1 KB of each member, a ConditionCheck included.
//
// An empty answer counts one unit where DynamoDB Local reports none, as AWS documents a read of
// an absent item; the Meter errs on the side of the bill.
package costtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// Unit sizes of DynamoDB's on-demand request units.
const (
	readUnitBytes  = 4096
	writeUnitBytes = 1024
)

// Bill is what a run of calls cost.
type Bill struct {
	Calls      int
	ReadUnits  float64
	WriteUnits float64
	// ItemsRead counts the items GetItem, BatchGetItem and Query returned.
	ItemsRead int
}

// Add returns the sum of two bills.
func (b Bill) Add(o Bill) Bill {
	return Bill{Calls: b.Calls + o.Calls, ReadUnits: b.ReadUnits + o.ReadUnits,
		WriteUnits: b.WriteUnits + o.WriteUnits, ItemsRead: b.ItemsRead + o.ItemsRead}
}

// Scale returns the bill divided by n, the average of n runs.
func (b Bill) Scale(n int) Bill {
	f := float64(n)
	return Bill{Calls: int(math.Round(float64(b.Calls) / f)), ReadUnits: b.ReadUnits / f,
		WriteUnits: b.WriteUnits / f, ItemsRead: int(math.Round(float64(b.ItemsRead) / f))}
}

// Meter counts what the calls of a client cost. It is safe for concurrent use.
type Meter struct {
	raw   *ddb.Client // unmetered: reads the items a write changes, before and after
	table string

	mu         sync.Mutex
	bill       Bill
	mismatches []string
}

// Take returns the bill of the calls made since the last Take, and starts a new one.
func (m *Meter) Take() Bill {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bill
	m.bill = Bill{}
	return b
}

// Mismatches lists the calls whose units DynamoDB Local reported differently from the Meter's
// own figure, where DynamoDB Local's is faithful: a sign that the Meter's size rules are wrong.
func (m *Meter) Mismatches() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.mismatches...)
}

// Table is a fresh table on DynamoDB Local whose adapter's calls go through Meter.
type Table struct {
	tables.Table
	Meter *Meter
	// Direct is an adapter of the same table, with the same clock, whose calls are not
	// metered: for setting a test up.
	Direct store.Table
}

// NewTable creates the table, deleted at the end of the test; it skips tb when DynamoDB Local
// is not configured (tables.NewLocal names scripts/test.sh).
//
// The table has the key schema of dynamodb.CreateTable but no stream: billing does not depend
// on it, and DynamoDB Local keeps every stream record in memory and slows down for every test
// after one that writes tens of thousands of items to a table with a stream (measured: 15 000
// puts took 5 s on a table without a stream, 7 s on the first with one, over 3 minutes on the
// second).
func NewTable(tb testing.TB) Table {
	tb.Helper()
	l := tables.NewLocal(tb)
	name := l.Name + "-cost"
	ctx := context.Background()
	_, err := l.DB.CreateTable(ctx, &ddb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(store.AttrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(store.AttrSK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(store.AttrPK), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String(store.AttrSK), KeyType: types.KeyTypeRange},
		},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		tb.Fatalf("create table %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := l.DB.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			tb.Errorf("delete table %s: %v", name, err)
		}
	})
	m := &Meter{raw: l.DB, table: name}
	client := ddb.NewFromConfig(l.Config, func(o *ddb.Options) {
		o.BaseEndpoint = aws.String(l.Endpoint)
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			return s.Initialize.Add(m, middleware.After)
		})
	})
	clk := clock.NewFake(tables.Start)
	return Table{
		Table: tables.Table{
			Table:   dynamodb.New(client, name, l.Options(clk)),
			Clock:   clk,
			Adapter: tables.AdapterDynamoDB,
		},
		Meter:  m,
		Direct: dynamodb.New(l.DB, name, l.Options(clk)),
	}
}

// ID names the middleware.
func (m *Meter) ID() string { return "RoadEventsCostMeter" }

// HandleInitialize meters one call: it asks for the consumed capacity, reads the sizes of the
// items a write changes before it, runs the call, and counts it.
func (m *Meter) HandleInitialize(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
	middleware.InitializeOutput, middleware.Metadata, error,
) {
	call, err := m.begin(ctx, in.Parameters)
	if err != nil {
		return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("costtest: %w", err)
	}
	out, md, err := next.HandleInitialize(ctx, in)
	if err == nil || isConditionFailure(err) {
		// A refused write is billed as DynamoDB bills it: for the item it would have written.
		if ferr := m.finish(ctx, call, out.Result); ferr != nil {
			return out, md, fmt.Errorf("costtest: %w", ferr)
		}
	}
	return out, md, err
}

// isConditionFailure tells a write refused on its condition, which DynamoDB bills.
func isConditionFailure(err error) bool {
	var (
		ccf      *types.ConditionalCheckFailedException
		canceled *types.TransactionCanceledException
	)
	return errors.As(err, &ccf) || errors.As(err, &canceled)
}

// pendingCall is a call under way: what it is and what its items weighed before.
type pendingCall struct {
	params any
	// before and request are, per item a write touches, its stored size before the call and
	// the size of the item a put sends (0 for other writes).
	keys    []map[string]types.AttributeValue
	before  []int
	request []int
	twice   []bool // a transaction member: billed twice
}

// begin asks the call for its consumed capacity and, for a write, reads the items it touches.
func (m *Meter) begin(ctx context.Context, params any) (*pendingCall, error) {
	c := &pendingCall{params: params}
	add := func(key, item map[string]types.AttributeValue, twice bool) {
		if key == nil {
			key = map[string]types.AttributeValue{store.AttrPK: item[store.AttrPK], store.AttrSK: item[store.AttrSK]}
		}
		c.keys = append(c.keys, key)
		c.request = append(c.request, itemSize(item))
		c.twice = append(c.twice, twice)
	}
	total := types.ReturnConsumedCapacityTotal
	switch p := params.(type) {
	case *ddb.GetItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.BatchGetItemInput:
		p.ReturnConsumedCapacity = total
	case *ddb.QueryInput:
		p.ReturnConsumedCapacity = total
	case *ddb.PutItemInput:
		p.ReturnConsumedCapacity = total
		add(nil, p.Item, false)
	case *ddb.DeleteItemInput:
		p.ReturnConsumedCapacity = total
		add(p.Key, nil, false)
	case *ddb.UpdateItemInput:
		p.ReturnConsumedCapacity = total
		add(p.Key, nil, false)
	case *ddb.TransactWriteItemsInput:
		p.ReturnConsumedCapacity = total
		for _, ti := range p.TransactItems {
			switch {
			case ti.Put != nil:
				add(nil, ti.Put.Item, true)
			case ti.Delete != nil:
				add(ti.Delete.Key, nil, true)
			case ti.Update != nil:
				add(ti.Update.Key, nil, true)
			case ti.ConditionCheck != nil:
				add(ti.ConditionCheck.Key, nil, true)
			}
		}
	default:
		return nil, fmt.Errorf("call %T is not metered", params)
	}
	for _, k := range c.keys {
		size, err := m.storedSize(ctx, k)
		if err != nil {
			return nil, err
		}
		c.before = append(c.before, size)
	}
	return c, nil
}

// storedSize is the size of the item at key as the table holds it (expired or not), 0 when
// there is none.
func (m *Meter) storedSize(ctx context.Context, key map[string]types.AttributeValue) (int, error) {
	out, err := m.raw.GetItem(ctx, &ddb.GetItemInput{TableName: aws.String(m.table), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return 0, fmt.Errorf("read the size of an item: %w", err)
	}
	return itemSize(out.Item), nil
}

// finish counts a call that DynamoDB answered.
func (m *Meter) finish(ctx context.Context, c *pendingCall, result any) error {
	var (
		bill  = Bill{Calls: 1}
		local float64 // DynamoDB Local's figure
		check bool    // whether DynamoDB Local's figure is faithful for this call
	)
	switch p := c.params.(type) {
	case *ddb.GetItemInput:
		out, _ := result.(*ddb.GetItemOutput)
		if out == nil {
			return nil
		}
		bill.ReadUnits = readUnits(itemSize(out.Item), p.ConsistentRead)
		if out.Item != nil {
			bill.ItemsRead = 1
		}
		local, check = capacity(out.ConsumedCapacity), true
	case *ddb.QueryInput:
		out, _ := result.(*ddb.QueryOutput)
		if out == nil {
			return nil
		}
		size := 0
		for _, it := range out.Items {
			size += itemSize(it)
		}
		bill.ReadUnits = readUnits(size, p.ConsistentRead)
		bill.ItemsRead = len(out.Items)
		local, check = capacity(out.ConsumedCapacity), len(out.Items) > 0
	case *ddb.BatchGetItemInput:
		out, _ := result.(*ddb.BatchGetItemOutput)
		if out == nil {
			return nil
		}
		req := p.RequestItems[m.table]
		found := out.Responses[m.table]
		for _, it := range found {
			bill.ReadUnits += readUnits(itemSize(it), req.ConsistentRead)
		}
		// Keys neither returned nor left unprocessed were read and found absent.
		absent := len(req.Keys) - len(found) - len(out.UnprocessedKeys[m.table].Keys)
		bill.ReadUnits += float64(absent) * readUnits(0, req.ConsistentRead)
		bill.ItemsRead = len(found)
		for _, cc := range out.ConsumedCapacity {
			local += aws.ToFloat64(cc.CapacityUnits)
		}
		check = absent == 0
	default: // a write
		for i, k := range c.keys {
			after := c.before[i]
			if _, isUpdate := c.params.(*ddb.UpdateItemInput); isUpdate || c.twice[i] {
				size, err := m.storedSize(ctx, k)
				if err != nil {
					return err
				}
				after = size
			}
			units := writeUnits(max(c.before[i], c.request[i], after))
			if c.twice[i] {
				units *= 2
			}
			bill.WriteUnits += units
		}
		switch out := result.(type) {
		case *ddb.PutItemOutput:
			local, check = capacity(out.ConsumedCapacity), true
		case *ddb.DeleteItemOutput:
			local, check = capacity(out.ConsumedCapacity), true
		case *ddb.UpdateItemOutput:
			local, check = capacity(out.ConsumedCapacity), true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bill = m.bill.Add(bill)
	if own := bill.ReadUnits + bill.WriteUnits; check && local != own {
		m.mismatches = append(m.mismatches, fmt.Sprintf("%T: DynamoDB Local reported %.1f units, the meter counted %.1f", c.params, local, own))
	}
	return nil
}

// capacity is the units a ConsumedCapacity reports (0 when absent).
func capacity(cc *types.ConsumedCapacity) float64 {
	if cc == nil {
		return 0
	}
	return aws.ToFloat64(cc.CapacityUnits)
}

// readUnits is what reading size bytes costs: one unit per 4 KB, at least one, half of it
// when the read is eventually consistent (consistent nil or false).
func readUnits(size int, consistent *bool) float64 {
	units := math.Max(1, math.Ceil(float64(size)/readUnitBytes))
	if !aws.ToBool(consistent) {
		units /= 2
	}
	return units
}

// writeUnits is what writing an item of size bytes costs: one unit per 1 KB, at least one.
func writeUnits(size int) float64 {
	return math.Max(1, math.Ceil(float64(size)/writeUnitBytes))
}

// itemSize is the size DynamoDB bills an item by (0 for no item).
func itemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	}
	panic(fmt.Sprintf("costtest: attribute value %T has no size rule", v))
}

// numberSize is one byte per two significant digits, and one more.
func numberSize(s string) int {
	digits := strings.Trim(strings.ReplaceAll(strings.TrimPrefix(s, "-"), ".", ""), "0")
	return (len(digits)+1)/2 + 1
}
