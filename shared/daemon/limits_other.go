//go:build !unix

package daemon

// RaiseFileLimit reports no descriptor limit where the system has none to raise.
func RaiseFileLimit() (uint64, error) { return 0, nil }
