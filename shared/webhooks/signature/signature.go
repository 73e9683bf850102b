// Package signature is the Roadevents-Signature of webhook deliveries (docs/webhooks.md §2):
// how the service signs a delivery and how a receiver checks it. It depends on the standard
// library alone, so that a receiver (the SDK's) links nothing else of the service.
package signature

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header is the header of a delivery that carries its signature.
const Header = "Roadevents-Signature"

// SecretPrefix starts every signing secret, so that one found in a log or a repository is
// recognised as ours.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a signature's time may be from the receiver's clock before the
// check refuses it: a replayed delivery older than this is refused.
const DefaultTolerance = 5 * time.Minute

// Errors of Verify. Check them with errors.Is.
var (
	ErrNoSignature = errors.New("signature: no t= and v1= in the signature header")
	ErrTooOld      = errors.New("signature: the signature's time is outside the tolerance")
	ErrMismatch    = errors.New("signature: no signature matches the body and secret")
)

// NewSecret returns a new signing secret: SecretPrefix and 32 random bytes in hex.
func NewSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return SecretPrefix + hex.EncodeToString(b)
}

// Sign returns the signature header of body sent at t: the time in Unix seconds and, for each
// secret, v1= the hex HMAC-SHA256 of "<t>.<body>" under the whole secret string. While a
// secret is being rotated both sign, so that a receiver holding either accepts the delivery.
func Sign(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	parts := []string{"t=" + ts}
	for _, s := range secrets {
		parts = append(parts, "v1="+hex.EncodeToString(mac(s, ts, body)))
	}
	return strings.Join(parts, ",")
}

// Verify checks header against body as a receiver holding secret does (docs/webhooks.md §2):
// one of its v1 signatures must be the HMAC of "<t>.<body>", compared in constant time, and t
// within tolerance of now.
func Verify(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w (%s)", ErrTooOld, d.Round(time.Second))
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrMismatch
}

func mac(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}
