package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/roadevents/roadevents/shared/durable"
)

// ErrSecretFile is returned by LoadOrCreateKey for a key file that exists but does not hold a
// key of the expected size (damaged, or written by hand).
var ErrSecretFile = errors.New("config: bad key file")

// LoadOrCreateKey returns the key of size random bytes kept in the file dir/name, creating it
// on first use: the local secrets of `go run .` (event-id HMAC key, console hash and sealing
// keys) exist without the user doing anything, and survive restarts. A deployment of several
// processes (Lambda) passes its keys through the environment instead.
//
// The file holds the key in hex on one line and is readable by its owner only (0600, in a
// folder created 0700). It is created atomically and never overwritten: the key is written to
// a temporary file, synced, then linked to its name, which fails if another process created it
// first (that process's key is then read). A crash therefore never leaves a half-written key,
// and two processes starting together agree on one key.
func LoadOrCreateKey(dir, name string, size int) ([]byte, error) {
	if size < 16 {
		return nil, fmt.Errorf("config: key %s of %d bytes is too short", name, size)
	}
	path := filepath.Join(dir, name)
	key, err := readKeyFile(path, size)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("config: create %s: %w", dir, err)
	}
	key = make([]byte, size)
	rand.Read(key) // crypto/rand never fails since Go 1.24
	err = durable.WriteNew(path, []byte(hex.EncodeToString(key)+"\n"))
	switch {
	case errors.Is(err, fs.ErrExist):
		return readKeyFile(path, size) // another process was first: use its key
	case err != nil:
		return nil, fmt.Errorf("config: create key %s: %w", path, err)
	}
	return key, nil
}

func readKeyFile(path string, size int) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(key) != size {
		return nil, fmt.Errorf("%w: %s must hold %d bytes in hex", ErrSecretFile, path, size)
	}
	return key, nil
}
