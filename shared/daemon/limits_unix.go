//go:build unix

package daemon

import "syscall"

// RaiseFileLimit raises the soft limit on open descriptors to the hard limit, as far as the
// system lets a process go without privilege, and returns the limit now in force. The Go
// runtime does the same at start on most systems; doing it here as well makes the figure the
// connection budget is cut from (DefaultConnectionBudget) known rather than assumed.
func RaiseFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			return uint64(lim.Cur), err
		}
		lim = raised
	}
	return uint64(lim.Cur), nil
}
