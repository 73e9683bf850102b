// Package durable holds what the packages that write files need to make them survive a crash.
package durable

import "os"

// SyncDir makes the entries of folder dir durable: a file created, renamed or removed in it
// is only certain to stay so once the folder itself is synced.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
