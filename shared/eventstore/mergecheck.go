//go:build !nomergecheck

package eventstore

// mergeCheck is whether a publication or revision searches for the report it duplicates
// (docs/network.md §1). It is always on; a build with -tags nomergecheck turns it off, only to
// measure what the check costs (docs/performance.md §11).
const mergeCheck = true
