package dynamodb_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
)

// These tests need no server: they check the expressions the adapter sends, with the
// placeholders put back, so that what DynamoDB evaluates can be read in the test table.

const now = 1000 // Unix second the expressions judge TTL at

// Liveness as the store package doc defines it: an item past its TTL (ttl <= now) is absent.
const (
	live = "(attribute_exists(pk) AND (attribute_not_exists(ttl) OR ttl > 1000))"
	dead = "(attribute_not_exists(pk) OR ttl <= 1000)"
)

func TestConditionExpression(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		cond store.Condition
		want string
	}{
		{"None", store.Condition{}, ""},
		{"IfExistsNeedsLiveItem", store.IfExists(), live},
		{"IfNotExistsAcceptsExpiredItem", store.IfNotExists(), dead},
		{"IfAttrExists", store.IfAttrExists("status"), "(" + live + " AND attribute_exists(status))"},
		{"IfAttrNotExists", store.IfAttrNotExists("status"), "(" + dead + " OR attribute_not_exists(status))"},
		{"IfEqualString", store.IfEqual("status", "active"), "(" + live + ` AND status = "active")`},
		{"IfEqualWholeFloatIsNumber", store.IfEqual("n", 5.0), "(" + live + " AND n = 5)"},
		{"IfNotEqualHoldsForAbsent", store.IfNotEqual("n", 5), "(" + dead + " OR attribute_not_exists(n) OR n <> 5)"},
		{"IfLess", store.IfLess("n", 2.5), "(" + live + " AND n < 2.5)"},
		{"IfLessEqual", store.IfLessEqual("n", -1), "(" + live + " AND n <= -1)"},
		{"IfGreater", store.IfGreater("s", "b"), "(" + live + ` AND s > "b")`},
		{"IfGreaterEqual", store.IfGreaterEqual("n", 7), "(" + live + " AND n >= 7)"},
		{"IfEqualBool", store.IfEqual("b", true), "(" + live + " AND b = true)"},
		{"IfEqualList", store.IfEqual("l", []string{"x", "y"}), "(" + live + ` AND l = ["x" "y"])`},
		{"And", store.And(store.IfExists(), store.IfEqual("n", 1)),
			"(" + live + " AND (" + live + " AND n = 1))"},
		{"Or", store.Or(store.IfNotExists(), store.IfLess("n", 3)),
			"(" + dead + " OR (" + live + " AND n < 3))"},
		{"AndDropsPartsThatAlwaysHold", store.And(store.Condition{}, store.IfExists()), live},
		{"OrWithPartThatAlwaysHoldsAlwaysHolds", store.Or(store.IfExists(), store.Condition{}), ""},
		{"EmptyAndAlwaysHolds", store.And(), ""},
		{"EmptyOrNeverHolds", store.Or(), "(attribute_exists(pk) AND attribute_not_exists(pk))"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expr, names, values, err := dynamodb.ConditionExpr(now, c.cond)
			if err != nil {
				t.Fatalf("ConditionExpr(%s) error = %v; want nil", c.name, err)
			}
			if got := resolve(t, expr, names, values); got != c.want {
				t.Errorf("ConditionExpr(%s) =\n %s\nwant\n %s", c.name, got, c.want)
			}
		})
	}
}

// TestExpressionsUsePlaceholders: attribute names such as ttl, status and name are DynamoDB
// reserved words, so a name written into an expression as it is would be refused.
func TestExpressionsUsePlaceholders(t *testing.T) {
	t.Parallel()
	cond := store.And(store.IfEqual("status", "x"), store.IfAttrExists("name"), store.IfLess("ttl", 5))
	expr, names, _, err := dynamodb.ConditionExpr(now, cond)
	if err != nil {
		t.Fatalf("ConditionExpr error = %v; want nil", err)
	}
	for _, word := range []string{"status", "name", "ttl", "pk"} {
		if strings.Contains(expr, word) {
			t.Errorf("condition expression %q names %q directly; want a placeholder", expr, word)
		}
	}
	if len(names) != 4 {
		t.Errorf("condition names %v; want one placeholder for each of pk, ttl, status, name", names)
	}
}

func TestUpdateExpression(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		u    store.Update
		want string
	}{
		{"Empty", store.Update{}, ""},
		{"SetInSortedOrder", store.Update{Set: map[string]any{"b": "x", "a": 1}}, `SET a = 1, b = "x"`},
		{"AddCountsAbsentAsZero", store.Update{Add: map[string]int64{"n": -2}}, "ADD n -2"},
		{"Remove", store.Update{Remove: []string{"r", "s"}}, "REMOVE r, s"},
		{"All", store.Update{Set: map[string]any{"ttl": int64(5)}, Add: map[string]int64{"n": 1}, Remove: []string{"r"}},
			"SET ttl = 5 ADD n 1 REMOVE r"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			expr, names, values, err := dynamodb.UpdateExpr(c.u)
			if err != nil {
				t.Fatalf("UpdateExpr(%s) error = %v; want nil", c.name, err)
			}
			if got := resolve(t, expr, names, values); got != c.want {
				t.Errorf("UpdateExpr(%s) = %q; want %q", c.name, got, c.want)
			}
		})
	}
}

// TestInvalidUpdateRefusedBeforeCall: what DynamoDB refuses as a ValidationException is
// store.ErrInvalid without a round trip.
func TestInvalidUpdateRefusedBeforeCall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		u    store.Update
	}{
		{"SetPartitionKey", store.Update{Set: map[string]any{store.AttrPK: "x"}}},
		{"RemoveSortKey", store.Update{Remove: []string{store.AttrSK}}},
		{"SetAndAddSameName", store.Update{Set: map[string]any{"n": 1}, Add: map[string]int64{"n": 1}}},
		{"RemoveTwice", store.Update{Remove: []string{"r", "r"}}},
		{"EmptyName", store.Update{Add: map[string]int64{"": 1}}},
		{"UnsupportedValue", store.Update{Set: map[string]any{"v": struct{}{}}}},
		{"NonNumericTTL", store.Update{Set: map[string]any{store.AttrTTL: "tomorrow"}}},
	}
	for _, c := range cases {
		if _, _, _, err := dynamodb.UpdateExpr(c.u); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("UpdateExpr(%s) error = %v; want ErrInvalid", c.name, err)
		}
	}
}

func TestCancellationCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  types.TransactionCanceledException
		want []string
	}{
		{"FromReasons", types.TransactionCanceledException{CancellationReasons: []types.CancellationReason{
			{Code: aws.String("None")}, {Code: aws.String("ConditionalCheckFailed")},
		}}, []string{"None", "ConditionalCheckFailed"}},
		{"FromMessage", types.TransactionCanceledException{Message: aws.String(
			"Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]")},
			[]string{"None", "TransactionConflict"}},
		{"Neither", types.TransactionCanceledException{Message: aws.String("Transaction cancelled")}, nil},
	}
	for _, c := range cases {
		got := dynamodb.CancellationCodes(&c.err)
		if fmt.Sprint(got) != fmt.Sprint(c.want) || len(got) != len(c.want) {
			t.Errorf("CancellationCodes(%s) = %q; want %q", c.name, got, c.want)
		}
	}
}

var placeholder = regexp.MustCompile(`[#:][nv][0-9]+`)

// resolve writes an expression with its placeholders replaced by names and values, and fails
// on a placeholder without a definition or a definition the expression does not use (which
// DynamoDB refuses).
func resolve(t *testing.T, expr string, names map[string]string, values map[string]types.AttributeValue) string {
	t.Helper()
	used := map[string]bool{}
	out := placeholder.ReplaceAllStringFunc(expr, func(p string) string {
		used[p] = true
		if n, ok := names[p]; ok {
			return n
		}
		if v, ok := values[p]; ok {
			return render(v)
		}
		t.Errorf("expression %q uses undefined placeholder %s", expr, p)
		return p
	})
	for p := range names {
		if !used[p] {
			t.Errorf("expression %q does not use name placeholder %s", expr, p)
		}
	}
	for p := range values {
		if !used[p] {
			t.Errorf("expression %q does not use value placeholder %s", expr, p)
		}
	}
	return out
}

func render(av types.AttributeValue) string {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return fmt.Sprintf("%q", v.Value)
	case *types.AttributeValueMemberN:
		return v.Value
	case *types.AttributeValueMemberBOOL:
		return fmt.Sprint(v.Value)
	case *types.AttributeValueMemberB:
		return fmt.Sprintf("b%x", v.Value)
	case *types.AttributeValueMemberL:
		parts := make([]string, len(v.Value))
		for i, e := range v.Value {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("%T", av)
}
