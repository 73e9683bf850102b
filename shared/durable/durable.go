// Package durable writes files that survive a crash: a file is either absent or whole, and
// once a call returns, it stays so after a power cut.
package durable

import (
	"os"
	"path/filepath"
)

// WriteNew creates path holding data, readable and writable by the owner only. It fails with
// an error matching fs.ErrExist when path already exists, so of two processes creating the same
// file the second learns it lost and can read the first one's. Data is written to a temporary
// file of the same folder, synced, then linked into place: nobody ever reads a partial file.
func WriteNew(path string, data []byte) (err error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// CreateTemp makes the file 0600: never readable by others, even briefly.
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp.Name(), path)
	}
	if err != nil {
		return err
	}
	return SyncDir(dir)
}

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
