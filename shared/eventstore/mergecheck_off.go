//go:build nomergecheck

package eventstore

// mergeCheck is off in this build, made with -tags nomergecheck to measure what the duplicate
// merge costs publishing (docs/performance.md §11). Never deploy it: reports are not merged.
const mergeCheck = false
