package dynamodb

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/roadevents/roadevents/shared/store"
)

// ConditionExpr exposes the condition expression the adapter sends for c at Unix second now.
func ConditionExpr(now int64, c store.Condition) (string, map[string]string, map[string]types.AttributeValue, error) {
	b := newExprBuilder(now)
	e, err := b.condition(c)
	return e, b.Names(), b.Values(), err
}

// UpdateExpr exposes the update expression the adapter sends for u.
func UpdateExpr(u store.Update) (string, map[string]string, map[string]types.AttributeValue, error) {
	b := newExprBuilder(0)
	e, err := b.update(u)
	return e, b.Names(), b.Values(), err
}

// CancellationCodes exposes how a refused transaction's reasons are read.
var CancellationCodes = cancellationCodes
