package apikey

import (
	"crypto/rand"
	"strings"
)

// Credential formats (docs/api.md §10.3).
const (
	// KeyPrefix starts every API key.
	KeyPrefix = "svc_"
	// TicketPrefix starts every stream ticket: it shares KeyPrefix but is not an API key.
	TicketPrefix = "svc_st_"
	// SecretLen is the number of base62 characters after KeyPrefix (docs/api.md §5 API key rule 1).
	SecretLen = 43
	// PrefixLen is how many leading characters of the raw key the listing shows (docs/api.md §2.9:
	// "about a dozen"): KeyPrefix and 8 characters of the secret, which identify a key to a
	// person without weakening it (35 unknown characters are about 208 bits).
	PrefixLen = 12
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newRaw returns a fresh raw key: KeyPrefix and SecretLen base62 characters from crypto/rand.
func newRaw() string {
	return KeyPrefix + randomBase62(SecretLen)
}

// randomBase62 returns n uniformly random base62 characters. Bytes of 248 and above are
// rejected so that every character is equally likely (248 = 4 * 62).
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n+n/4+8)
	for len(out) < n {
		// crypto/rand.Read never returns an error (Go 1.24+): it crashes the program instead
		// of handing out a predictable key.
		_, _ = rand.Read(buf)
		for _, b := range buf {
			if b < 248 && len(out) < n {
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

// newKeyID returns a fresh key id: "key_" and 26 characters of lower-case base32 (130 bits),
// like the other opaque ids of the service.
func newKeyID() string {
	return "key_" + strings.ToLower(rand.Text())
}

// WellFormed tells whether raw has the shape of an API key: KeyPrefix and SecretLen base62
// characters. A stream ticket, a session token or anything else is not.
func WellFormed(raw string) bool {
	if len(raw) != len(KeyPrefix)+SecretLen || !strings.HasPrefix(raw, KeyPrefix) {
		return false
	}
	for i := len(KeyPrefix); i < len(raw); i++ {
		c := raw[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}
