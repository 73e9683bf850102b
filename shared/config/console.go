package config

import (
	"encoding/hex"
	"fmt"
	"net/mail"
)

// MailAdapter names the mailer (package mail).
type MailAdapter string

// The mailers: the outbox folder of `go run .` (docs/api.md §10.4) and Amazon SES on AWS.
const (
	MailOutbox MailAdapter = "outbox"
	MailSES    MailAdapter = "ses"
)

// Mail configures outgoing e-mail.
type Mail struct {
	// Adapter is MailOutbox (ROADEVENTS_MAILER unset or "outbox") or MailSES.
	Adapter MailAdapter
	// From is the sender (ROADEVENTS_MAIL_FROM): an address or "Name <address>", a verified
	// SES identity with MailSES.
	From string
	// SESConfigurationSet names the SES configuration set (ROADEVENTS_SES_CONFIGURATION_SET).
	SESConfigurationSet string
}

// DefaultMail writes to the outbox from an address that cannot be delivered to (.invalid,
// RFC 2606), since local messages never leave the machine.
var DefaultMail = Mail{Adapter: MailOutbox, From: "Road Events <no-reply@roadevents.invalid>"}

// Console holds the secrets of the console's sign-in (package consoleauth). They are secrets:
// never commit or log them.
type Console struct {
	// HashKey keys the HMAC of e-mail and recovery codes (ROADEVENTS_AUTH_HASH_KEY, hex, at
	// least ConsoleKeySize bytes). Every process of one table must share it.
	HashKey []byte
	// SealKey is the AES-256-GCM key TOTP secrets are sealed with when KMSKeyID is empty
	// (ROADEVENTS_SEAL_KEY, hex, exactly ConsoleKeySize bytes).
	SealKey []byte
	// KMSKeyID, when set, seals TOTP secrets with this KMS key instead (ROADEVENTS_KMS_KEY_ID:
	// key id, ARN or alias), as on AWS.
	KMSKeyID string
}

// ConsoleKeySize is the size of the console's keys: 256 bits.
const ConsoleKeySize = 32

// Files of the data folder holding the console's keys for `go run .` (EnsureConsoleKeys).
const (
	HashKeyFile = "console-hash.key"
	SealKeyFile = "console-seal.key"
)

// readConsole applies the mail and console variables of getenv.
func (c *Config) readConsole(getenv func(string) string) error {
	if v := getenv("ROADEVENTS_MAILER"); v != "" {
		switch MailAdapter(v) {
		case MailOutbox, MailSES:
			c.Mail.Adapter = MailAdapter(v)
		default:
			return fmt.Errorf("config: ROADEVENTS_MAILER=%q: want %q or %q", v, MailOutbox, MailSES)
		}
	}
	setString(&c.Mail.From, getenv("ROADEVENTS_MAIL_FROM"))
	setString(&c.Mail.SESConfigurationSet, getenv("ROADEVENTS_SES_CONFIGURATION_SET"))
	setString(&c.Console.KMSKeyID, getenv("ROADEVENTS_KMS_KEY_ID"))
	for _, k := range []struct {
		name  string
		dst   *[]byte
		exact bool
	}{
		{"ROADEVENTS_AUTH_HASH_KEY", &c.Console.HashKey, false},
		{"ROADEVENTS_SEAL_KEY", &c.Console.SealKey, true},
	} {
		v := getenv(k.name)
		if v == "" {
			continue
		}
		key, err := hex.DecodeString(v)
		switch {
		case err != nil:
			return fmt.Errorf("config: %s: want hexadecimal", k.name)
		case len(key) < ConsoleKeySize, k.exact && len(key) != ConsoleKeySize:
			return fmt.Errorf("config: %s: %d bytes, want %d", k.name, len(key), ConsoleKeySize)
		}
		*k.dst = key
	}
	return nil
}

// validateConsole reports mail settings the service cannot send with.
func (c Config) validateConsole() error {
	if _, err := mail.ParseAddress(c.Mail.From); err != nil {
		return fmt.Errorf("config: ROADEVENTS_MAIL_FROM=%q is not an address", c.Mail.From)
	}
	return nil
}

// EnsureConsoleKeys makes sure the console's keys are set: those the environment did not
// give are read from the data folder, created there on first start (LoadOrCreateKey), so
// that `go run .` signs people in across restarts without any setup. The sealing key is not
// needed when KMSKeyID is set.
func (c *Config) EnsureConsoleKeys() error {
	needSeal := len(c.Console.SealKey) == 0 && c.Console.KMSKeyID == ""
	if c.DataDir == "" && (len(c.Console.HashKey) == 0 || needSeal) {
		return fmt.Errorf("config: no console keys: set ROADEVENTS_AUTH_HASH_KEY and ROADEVENTS_SEAL_KEY (or ROADEVENTS_KMS_KEY_ID), or a data folder")
	}
	if len(c.Console.HashKey) == 0 {
		key, err := LoadOrCreateKey(c.DataDir, HashKeyFile, ConsoleKeySize)
		if err != nil {
			return err
		}
		c.Console.HashKey = key
	}
	if needSeal {
		key, err := LoadOrCreateKey(c.DataDir, SealKeyFile, ConsoleKeySize)
		if err != nil {
			return err
		}
		c.Console.SealKey = key
	}
	return nil
}
