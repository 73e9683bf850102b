package mail

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/durable"
)

// OutboxOptions configure an Outbox.
type OutboxOptions struct {
	// From is the sender, as an address or "Name <address>".
	From string
	// Clock dates the messages and names their files; clock.System when nil.
	Clock clock.Clock
	// Logger receives the one-line summary of each message; slog.Default() when nil.
	Logger *slog.Logger
}

// Outbox writes every message to a folder instead of sending it (docs/api.md §10.4).
type Outbox struct {
	dir  string
	from string
	clk  clock.Clock
	log  *slog.Logger
}

var _ Mailer = (*Outbox)(nil)

// NewOutbox returns an outbox writing into dir, which is created when missing (owner-only:
// the messages hold sign-in codes).
func NewOutbox(dir string, opts OutboxOptions) (*Outbox, error) {
	if opts.Clock == nil {
		opts.Clock = clock.System
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if _, err := mail.ParseAddress(opts.From); err != nil {
		return nil, fmt.Errorf("%w: sender %q", ErrInvalid, opts.From)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mail: create outbox %s: %w", dir, err)
	}
	return &Outbox{dir: dir, from: opts.From, clk: opts.Clock, log: opts.Logger}, nil
}

// Dir returns the outbox folder.
func (o *Outbox) Dir() string { return o.dir }

// Send writes m as <dir>/<time>-<id>.eml. The file appears whole or not at all: it is written
// to a temporary name, synced, then renamed, so a crash never leaves half a message for a
// reader to take a wrong code from. The summary line names the recipient, the subject and the
// file, never the body: the body holds a credential (docs/api.md §10.3: no credential in a log).
func (o *Outbox) Send(ctx context.Context, m Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	now := o.clk.Now().UTC()
	id := strings.ToLower(rand.Text()[:16])
	raw, err := Compose(m, o.from, now, id+"@outbox.invalid")
	if err != nil {
		return err
	}
	name := now.Format("20060102T150405.000000000Z") + "-" + id + ".eml"
	path := filepath.Join(o.dir, name)
	if err := durable.WriteNew(path, raw); err != nil {
		return fmt.Errorf("mail: write %s: %w", path, err)
	}
	o.log.InfoContext(ctx, "mail written to outbox", "to", m.To, "subject", m.Subject, "file", path)
	return nil
}

// Compose renders m as an RFC 5322 message with MIME (RFC 2045-2049): headers From, To,
// Subject, Date, Message-ID, MIME-Version, and a multipart/alternative body holding the plain
// text first and the HTML last (RFC 2046 5.1.4: the last is the preferred), each in UTF-8,
// quoted-printable. Lines end in CRLF.
func Compose(m Message, from string, date time.Time, messageID string) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if err := writePart(mw, "text/plain; charset=utf-8", m.Text); err != nil {
		return nil, err
	}
	if m.HTML != "" {
		if err := writePart(mw, "text/html; charset=utf-8", m.HTML); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	header := func(k, v string) { out.WriteString(k + ": " + v + "\r\n") }
	header("From", from)
	header("To", m.To)
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", date.Format(time.RFC1123Z))
	header("Message-ID", "<"+messageID+">")
	header("MIME-Version", "1.0")
	// Folded (RFC 5322 2.2.3): the boundary alone is 60 characters.
	header("Content-Type", "multipart/alternative;\r\n boundary="+mw.Boundary())
	out.WriteString("\r\n")
	out.Write(body.Bytes())
	return out.Bytes(), nil
}

func writePart(mw *multipart.Writer, contentType, content string) error {
	h := textproto.MIMEHeader{}
	h.Set("Content-Type", contentType)
	h.Set("Content-Transfer-Encoding", "quoted-printable")
	pw, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	qw := quotedprintable.NewWriter(pw)
	// Text mode: line breaks of content become CRLF.
	if _, err := qw.Write([]byte(strings.ReplaceAll(content, "\r\n", "\n"))); err != nil {
		return err
	}
	return qw.Close()
}
