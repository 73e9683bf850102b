// Package webhooks holds the service's webhook deliveries (docs/webhooks.md): the endpoints
// organisations register and their signing secrets, the durable queue of deliveries, the
// dispatcher that sends them signed (package signature holds the signature a receiver checks),
// and the retry schedule.
package webhooks

import "github.com/roadevents/roadevents/shared/webhooks/signature"

// The signature of a delivery, from package signature, under the names the service's code uses.
const (
	SignatureHeader  = signature.Header
	SecretPrefix     = signature.SecretPrefix
	DefaultTolerance = signature.DefaultTolerance
)

// Errors of Verify. Check them with errors.Is.
var (
	ErrNoSignature = signature.ErrNoSignature
	ErrTooOld      = signature.ErrTooOld
	ErrMismatch    = signature.ErrMismatch
)

// NewSecret, Sign and Verify are package signature's.
var (
	NewSecret = signature.NewSecret
	Sign      = signature.Sign
	Verify    = signature.Verify
)
