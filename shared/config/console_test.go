package config_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/config"
)

// The mail and console settings: outbox by default, SES and keys from the environment.
func TestFromEnvConsole(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Mail.Adapter != config.MailOutbox || c.Mail.From == "" {
		t.Errorf("Mail = %+v; want the outbox and a sender by default (docs/api.md §10.4)", c.Mail)
	}
	if c.Console.HashKey != nil || c.Console.SealKey != nil || c.Console.KMSKeyID != "" {
		t.Errorf("Console = %+v; want no keys until EnsureConsoleKeys", c.Console)
	}
	hash := strings.Repeat("ab", 40)
	sealKey := strings.Repeat("cd", 32)
	c, err = config.FromEnv(env(map[string]string{
		"ROADEVENTS_MAILER": "ses", "ROADEVENTS_MAIL_FROM": "Console <console@roadevents.example>",
		"ROADEVENTS_SES_CONFIGURATION_SET": "console", "ROADEVENTS_AUTH_HASH_KEY": hash,
		"ROADEVENTS_SEAL_KEY": sealKey, "ROADEVENTS_KMS_KEY_ID": "alias/roadevents-totp",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Mail != (config.Mail{Adapter: config.MailSES, From: "Console <console@roadevents.example>", SESConfigurationSet: "console"}) {
		t.Errorf("Mail = %+v", c.Mail)
	}
	if len(c.Console.HashKey) != 40 || len(c.Console.SealKey) != 32 || c.Console.KMSKeyID != "alias/roadevents-totp" {
		t.Errorf("Console = %d-byte hash key, %d-byte seal key, KMS %q", len(c.Console.HashKey), len(c.Console.SealKey), c.Console.KMSKeyID)
	}
}

func TestFromEnvConsoleRejects(t *testing.T) {
	t.Parallel()
	for name, m := range map[string]map[string]string{
		"unknown mailer":     {"ROADEVENTS_MAILER": "smtp"},
		"sender not an addr": {"ROADEVENTS_MAIL_FROM": "nobody"},
		"hash key not hex":   {"ROADEVENTS_AUTH_HASH_KEY": strings.Repeat("zz", 32)},
		"hash key short":     {"ROADEVENTS_AUTH_HASH_KEY": strings.Repeat("ab", 31)},
		"seal key not 32":    {"ROADEVENTS_SEAL_KEY": strings.Repeat("ab", 33)},
		"seal key not hex":   {"ROADEVENTS_SEAL_KEY": "secret"},
	} {
		if _, err := config.FromEnv(env(m)); err == nil {
			t.Errorf("%s: FromEnv(%v) = nil error; want an error", name, m)
		}
	}
}

// `go run .` needs no setup: EnsureConsoleKeys creates both keys in the data folder, owner-only,
// and reads the same keys on the next start.
func TestEnsureConsoleKeys(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	c := config.Default()
	c.DataDir = dir
	if err := c.EnsureConsoleKeys(); err != nil {
		t.Fatal(err)
	}
	if len(c.Console.HashKey) != config.ConsoleKeySize || len(c.Console.SealKey) != config.ConsoleKeySize {
		t.Fatalf("keys of %d and %d bytes; want %d", len(c.Console.HashKey), len(c.Console.SealKey), config.ConsoleKeySize)
	}
	if bytes.Equal(c.Console.HashKey, c.Console.SealKey) {
		t.Errorf("the hash key and the sealing key are equal; want two keys")
	}
	for _, name := range []string{config.HashKeyFile, config.SealKeyFile} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v; want 0600", name, info.Mode().Perm())
		}
	}
	again := config.Default()
	again.DataDir = dir
	if err := again.EnsureConsoleKeys(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Console.HashKey, c.Console.HashKey) || !bytes.Equal(again.Console.SealKey, c.Console.SealKey) {
		t.Errorf("keys changed across restarts; want the ones in the data folder")
	}

	// With KMS, no sealing key is made; keys from the environment are kept.
	kms := config.Default()
	kms.DataDir = filepath.Join(t.TempDir(), "kms")
	kms.Console.KMSKeyID = "alias/k"
	kms.Console.HashKey = bytes.Repeat([]byte{7}, 32)
	if err := kms.EnsureConsoleKeys(); err != nil {
		t.Fatal(err)
	}
	if kms.Console.SealKey != nil || !bytes.Equal(kms.Console.HashKey, bytes.Repeat([]byte{7}, 32)) {
		t.Errorf("with KMS and an env hash key: seal key %x, hash key %x; want none and the env one", kms.Console.SealKey, kms.Console.HashKey)
	}
	if _, err := os.Stat(kms.DataDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("data folder created (%v); want nothing written when no key is missing", err)
	}

	none := config.Default()
	none.DataDir = ""
	if err := none.EnsureConsoleKeys(); err == nil {
		t.Errorf("EnsureConsoleKeys without keys or data folder = nil; want an error")
	}
}

// Processes starting together agree on one key, and a damaged file is an error, never
// silently replaced (data sealed or hashed under the old key would be lost).
func TestLoadOrCreateKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := config.LoadOrCreateKey(dir, "k.key", 32)
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	wg.Wait()
	for i := range keys {
		if len(keys[i]) != 32 || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("concurrent LoadOrCreateKey returned different keys: %x vs %x", keys[i], keys[0])
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d files; want the key alone (no temporary file left)", len(entries))
	}
	os.WriteFile(filepath.Join(dir, "bad.key"), []byte("0011\n"), 0o600)
	if _, err := config.LoadOrCreateKey(dir, "bad.key", 32); !errors.Is(err, config.ErrSecretFile) {
		t.Errorf("LoadOrCreateKey of a damaged file = %v; want ErrSecretFile", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "bad.key")); string(data) != "0011\n" {
		t.Errorf("damaged key file rewritten to %q; want it left for the operator", data)
	}
}
