package event

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"regexp"
	"strings"
)

// IDPattern is the shape of every event id (docs/api.md §10.2): "ev_" and 26 characters of
// lower-case base32 (RFC 4648 alphabet, a-z and 2-7).
const IDPattern = `^ev_[a-z2-7]{26}$`

// idPrefix starts every event id.
const idPrefix = "ev_"

// idChars is the length of an id after its prefix: 26 base32 characters carry 130 bits.
const idChars = 26

// derivationContext separates event-id derivation from any other use of the same key.
const derivationContext = "roadevents event_id v1\x00"

var (
	idRegexp = regexp.MustCompile(IDPattern)
	base32Lc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
)

// NewID returns a random event id, for an event published without client_event_id
// (docs/api.md §10.2).
func NewID() string {
	// crypto/rand.Text is 26 characters of the upper-case RFC 4648 alphabet (at least 128
	// random bits), exactly the id's shape once lower-cased.
	return idPrefix + strings.ToLower(rand.Text())
}

// DerivedID returns the event id for client_event_id clientEventID of organisation org
// (docs/api.md §10.2): a keyed hash, so the same pair always names the same event, in either
// environment, and nobody without key can predict or forge another organisation's ids.
// The id does not depend on the environment: that is what lets the service refuse a
// client_event_id reused across the live/sandbox line (docs/api.md §7, 409).
func DerivedID(key []byte, org, clientEventID string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(derivationContext))
	// client_event_id cannot contain NUL (TokenPattern), so splitting at the last NUL
	// recovers the pair: distinct pairs hash distinct messages.
	mac.Write([]byte(org))
	mac.Write([]byte{0})
	mac.Write([]byte(clientEventID))
	return idPrefix + base32Lc.EncodeToString(mac.Sum(nil))[:idChars]
}

// ValidID reports whether s has the shape of an event id, so a malformed path parameter can
// be answered 404 without a read.
func ValidID(s string) bool { return idRegexp.MatchString(s) }
