package embedded

import (
	"os"
	"syscall"
)

// syncData makes f's written data durable. fdatasync skips the metadata a read does not need
// (times), as bbolt does on Linux.
func syncData(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
