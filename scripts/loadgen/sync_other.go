//go:build !linux

package main

import "os"

// syncData makes f's written data durable.
func syncData(f *os.File) error { return f.Sync() }
