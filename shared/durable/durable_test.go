package durable_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/roadevents/roadevents/shared/durable"
)

func TestWriteNewCreatesOnceAndLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	if err := durable.WriteNew(path, []byte("first")); err != nil {
		t.Fatalf("WriteNew = %v; want nil", err)
	}
	if err := durable.WriteNew(path, []byte("second")); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteNew = %v; want an error matching fs.ErrExist", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "first" {
		t.Fatalf("file = %q, %v; want the first write kept", got, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v; want 0600", info.Mode().Perm(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries; want only the file, no temporary one left", len(entries))
	}
}
