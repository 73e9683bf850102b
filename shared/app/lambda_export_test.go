package app

import "github.com/roadevents/roadevents/shared/store"

// LambdaTable exposes a Lambda's table to the tests of package app_test, which read what
// an invocation wrote while the Lambda still holds the embedded store's file.
func LambdaTable(l *Lambda) store.Table { return l.table }
