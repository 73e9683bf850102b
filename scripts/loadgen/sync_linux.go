package main

import (
	"os"
	"syscall"
)

// syncData makes f's written data durable as the embedded store's log does: fdatasync, which
// skips the metadata a read does not need.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
