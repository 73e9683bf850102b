package consoleauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/big"
	"strings"
)

// Token prefixes (docs/api.md §10.3).
const (
	SessionPrefix = "ses_"
	TempPrefix    = "tmp_"
	// TokenChars is the number of base62 characters after a token's prefix (about 256 bits).
	TokenChars = 43
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// newToken returns prefix + TokenChars characters of base62 from crypto/rand, drawn without
// modulo bias (bytes of 248 and above are skipped; 248 = 4 * 62).
func newToken(prefix string) string {
	var b strings.Builder
	b.Grow(len(prefix) + TokenChars)
	b.WriteString(prefix)
	buf := make([]byte, 64)
	for n := 0; n < TokenChars; {
		rand.Read(buf) // never fails (crypto/rand, Go 1.24+)
		for _, c := range buf {
			if c < 248 && n < TokenChars {
				b.WriteByte(base62[c%62])
				n++
			}
		}
	}
	return b.String()
}

// wellFormed tells whether token is prefix + TokenChars base62 characters; anything else is
// refused before the table is asked.
func wellFormed(token, prefix string) bool {
	rest, ok := strings.CutPrefix(token, prefix)
	if !ok || len(rest) != TokenChars {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// tokenHash is the SHA-256 a token is stored and looked up by (docs/api.md §10.3). A 256-bit random
// token needs no key: its hash cannot be reversed by trying values.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// codeHash is the keyed hash of a short code: HMAC-SHA-256 under the server key, over a
// purpose, the owner (address or user id) and the code, so equal codes of two owners hash
// differently. See the package doc for why a bare SHA-256 would not do.
func (s *Service) codeHash(purpose, owner, code string) string {
	m := hmac.New(sha256.New, s.hashKey)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write([]byte(owner))
	m.Write([]byte{0})
	m.Write([]byte(code))
	return hex.EncodeToString(m.Sum(nil))
}

// hashEqual compares two hashes in constant time.
func hashEqual(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }

// newEmailCode returns six uniformly random decimal digits.
func newEmailCode() string {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		panic(fmt.Sprintf("consoleauth: crypto/rand: %v", err))
	}
	return fmt.Sprintf("%06d", n.Int64())
}

// recoveryAlphabet is lower-case base32 without padding (RFC 4648), so a code reads aloud
// without case trouble: 10 characters carry 50 bits.
const recoveryAlphabet = "abcdefghijklmnopqrstuvwxyz234567"

// newRecoveryCode returns a code of the form xxxxx-xxxxx.
func newRecoveryCode() string {
	buf := make([]byte, 10)
	rand.Read(buf)
	out := make([]byte, 0, 11)
	for i, c := range buf {
		if i == 5 {
			out = append(out, '-')
		}
		out = append(out, recoveryAlphabet[c&31])
	}
	return string(out)
}

// normalizeRecoveryCode accepts a recovery code as people retype it: any case, with or
// without the dash or spaces. It returns "" for something that cannot be one.
func normalizeRecoveryCode(code string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(code) {
		switch {
		case r == '-' || r == ' ':
		case strings.ContainsRune(recoveryAlphabet, r):
			b.WriteRune(r)
		default:
			return ""
		}
	}
	if b.Len() != 10 {
		return ""
	}
	return b.String()
}

// newUserID returns "usr_" and 26 characters of lower-case base32 (130 random bits).
func newUserID() string {
	return "usr_" + strings.ToLower(rand.Text())
}

// normalizeEmail is the identity of an address: trimmed and lower-cased, so that
// Ada@Example.com and ada@example.com are one account (and one cap).
func normalizeEmail(email string) string {
	return strings.ToLower(strings.TrimSpace(email))
}
