package durable

import (
	"os"
	"syscall"
)

// SyncData makes f's written data durable. fdatasync skips the metadata a read does not need
// (times), as bbolt does on Linux.
func SyncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
