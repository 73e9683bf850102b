// Package mail sends the service's e-mail: sign-in codes, invitations and key-issuance
// notices. Callers see one narrow interface, Mailer, with one method, so that a transport is
// one more adapter and no caller changes; two adapters implement it:
//
//   - Outbox, for `go run .` (docs/api.md §10.4): every message is written as an RFC 5322 file
//     <dir>/<time>-<id>.eml and one summary line is logged, so that a developer reads the code
//     from the file without any mail server;
//   - SES, on AWS: Amazon SES v2 SendEmail.
//
// The package is a leaf: it knows nothing of the console or of HTTP.
package mail

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
)

// Mailer sends one message. Send returns once the message is handed over (written to the
// outbox, accepted by SES); an error means it was not.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Message is one e-mail with a plain-text body and an HTML alternative of the same content.
// Text must stand on its own: it is what the outbox's reader and plain-text clients see.
type Message struct {
	To      string // one addr-spec, for example "ada@example.com"
	Subject string // one line, no credential (it is logged)
	Text    string
	HTML    string // optional; the Text alone is sent when empty
}

// ErrInvalid is returned by Send for a message that cannot be sent as it is: a missing or
// malformed recipient, a subject with a line break (header injection), an empty body.
var ErrInvalid = errors.New("mail: invalid message")

// Validate reports a message no adapter may send.
func (m Message) Validate() error {
	if _, err := mail.ParseAddress(m.To); err != nil || strings.ContainsAny(m.To, "\r\n<>") {
		return fmt.Errorf("%w: recipient %q", ErrInvalid, m.To)
	}
	if m.Subject == "" || strings.ContainsAny(m.Subject, "\r\n") {
		return fmt.Errorf("%w: subject must be one non-empty line", ErrInvalid)
	}
	if m.Text == "" {
		return fmt.Errorf("%w: empty text body", ErrInvalid)
	}
	return nil
}
