//go:build !linux

package durable

import "os"

// SyncData makes f's written data durable.
func SyncData(f *os.File) error { return f.Sync() }
