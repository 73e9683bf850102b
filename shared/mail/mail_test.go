package mail_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"mime"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/clock"
	rmail "github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/mail/mailtest"
)

var codeMessage = rmail.Message{
	To:      "ada@example.com",
	Subject: "Your Road Events sign-in code",
	Text:    "Your sign-in code is 493817.\nIt expires in 10 minutes.\n",
	HTML:    "<p>Your sign-in code is <b>493817</b>.</p><p>It expires in 10 minutes.</p>",
}

// docs/api.md §10.4: every outgoing message is an RFC 5322 file <data>/outbox/<time>-<id>.eml with
// To, Subject and Date, the plain-text body holding the code; here also From and MIME, and an
// HTML alternative. One summary line is logged, without the code.
func TestOutboxWritesAnRFC5322Message(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "outbox")
	logs := &apitest.LogBuffer{}
	clk := clock.NewFake(time.Date(2040, 3, 4, 5, 6, 7, 0, time.UTC))
	o, err := rmail.NewOutbox(dir, rmail.OutboxOptions{
		From: "Road Events <no-reply@roadevents.invalid>", Clock: clk,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Send(t.Context(), codeMessage); err != nil {
		t.Fatalf("Send = %v", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("outbox holds %d files; want 1 (no temporary file left)", len(entries))
	}
	name := entries[0].Name()
	if !regexp.MustCompile(`^20400304T050607\.000000000Z-[a-z0-9]{16}\.eml$`).MatchString(name) {
		t.Errorf("file name %q; want <time>-<id>.eml", name)
	}
	info, _ := entries[0].Info()
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		t.Errorf("file mode %v; want readable by its owner only (it holds a code)", perm)
	}
	raw, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) {
		t.Errorf("a line ends in a bare LF; RFC 5322 lines end in CRLF")
	}
	msg, parts := mailtest.Parse(t, raw)
	for name, want := range map[string]string{
		"To": "ada@example.com", "Subject": codeMessage.Subject,
		"From": "Road Events <no-reply@roadevents.invalid>", "MIME-Version": "1.0",
	} {
		if got := msg.Header.Get(name); got != want {
			t.Errorf("header %s = %q; want %q", name, got, want)
		}
	}
	if d, err := msg.Header.Date(); err != nil || !d.Equal(clk.Now()) {
		t.Errorf("Date = %v, %v; want %v", d, err, clk.Now())
	}
	if len(parts) != 2 || !strings.HasPrefix(parts[0].ContentType, "text/plain") || !strings.HasPrefix(parts[1].ContentType, "text/html") {
		t.Fatalf("parts = %+v; want text/plain then text/html", parts)
	}
	if !strings.Contains(parts[0].Body, "493817") || !strings.Contains(parts[0].Body, "10 minutes") {
		t.Errorf("plain-text part %q lacks the code or its lifetime", parts[0].Body)
	}
	if !strings.Contains(parts[1].Body, "<b>493817</b>") {
		t.Errorf("HTML part %q lacks the code", parts[1].Body)
	}
	log := logs.String()
	if strings.Count(log, "\n") != 1 || !strings.Contains(log, name) || !strings.Contains(log, "ada@example.com") {
		t.Errorf("log = %q; want one line naming the file and the recipient", log)
	}
	if strings.Contains(log, "493817") {
		t.Errorf("log %q holds the code; no credential may be logged", log)
	}
}

// A non-ASCII subject and body survive the encoding (RFC 2047 subject, UTF-8 quoted-printable
// body with lines over 76 characters).
func TestComposeEncodesUTF8(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Straße gesperrt ", 20)
	m := rmail.Message{To: "zoë@example.com", Subject: "Ihr Anmeldecode für Straßen", Text: long + "\n= Ende"}
	raw, err := rmail.Compose(m, "no-reply@roadevents.invalid", time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC), "x@y")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 78 {
			t.Errorf("line of %d characters; RFC 5322 says at most 78: %q", len(line), line)
		}
	}
	msg, parts := mailtest.Parse(t, raw)
	subject, err := new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	if err != nil || subject != m.Subject {
		t.Errorf("decoded Subject = %q, %v; want %q", subject, err, m.Subject)
	}
	if len(parts) != 1 || strings.ReplaceAll(parts[0].Body, "\r\n", "\n") != m.Text {
		t.Errorf("parts = %+v; want the one text part %q", parts, m.Text)
	}
}

func TestInvalidMessages(t *testing.T) {
	t.Parallel()
	o, err := rmail.NewOutbox(t.TempDir(), rmail.OutboxOptions{From: "no-reply@roadevents.invalid"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		m    rmail.Message
	}{
		{"NoRecipient", rmail.Message{Subject: "s", Text: "t"}},
		{"TwoRecipients", rmail.Message{To: "a@example.com, b@example.com", Subject: "s", Text: "t"}},
		{"HeaderInjectionInTo", rmail.Message{To: "a@example.com\r\nBcc: b@example.com", Subject: "s", Text: "t"}},
		{"HeaderInjectionInSubject", rmail.Message{To: "a@example.com", Subject: "s\r\nBcc: b@example.com", Text: "t"}},
		{"NoSubject", rmail.Message{To: "a@example.com", Text: "t"}},
		{"NoText", rmail.Message{To: "a@example.com", Subject: "s"}},
	}
	for _, tc := range cases {
		if err := o.Send(t.Context(), tc.m); !errors.Is(err, rmail.ErrInvalid) {
			t.Errorf("%s: Send = %v; want ErrInvalid", tc.name, err)
		}
	}
	if entries, _ := os.ReadDir(o.Dir()); len(entries) != 0 {
		t.Errorf("outbox holds %d files after refused sends; want 0", len(entries))
	}
}

type fakeSES struct {
	in  []*sesv2.SendEmailInput
	err error
}

func (f *fakeSES) SendEmail(_ context.Context, in *sesv2.SendEmailInput, _ ...func(*sesv2.Options)) (*sesv2.SendEmailOutput, error) {
	f.in = append(f.in, in)
	if f.err != nil {
		return nil, f.err
	}
	return &sesv2.SendEmailOutput{MessageId: aws.String("m-1")}, nil
}

// The SES adapter sends one simple message: sender, one recipient, subject, text and HTML in
// UTF-8; an SES failure is returned without the body.
func TestSES(t *testing.T) {
	t.Parallel()
	f := &fakeSES{}
	s := rmail.NewSES(f, "Road Events <no-reply@roadevents.example>")
	s.ConfigurationSet = "console"
	if err := s.Send(t.Context(), codeMessage); err != nil {
		t.Fatalf("Send = %v", err)
	}
	if len(f.in) != 1 {
		t.Fatalf("SendEmail called %d times; want 1", len(f.in))
	}
	in := f.in[0]
	simple := in.Content.Simple
	got := []string{
		aws.ToString(in.FromEmailAddress), strings.Join(in.Destination.ToAddresses, ","),
		aws.ToString(simple.Subject.Data), aws.ToString(simple.Body.Text.Data), aws.ToString(simple.Body.Html.Data),
		aws.ToString(simple.Body.Text.Charset), aws.ToString(in.ConfigurationSetName),
	}
	want := []string{
		"Road Events <no-reply@roadevents.example>", "ada@example.com",
		codeMessage.Subject, codeMessage.Text, codeMessage.HTML, "UTF-8", "console",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("SendEmail input field %d = %q; want %q", i, got[i], want[i])
		}
	}
	if len(in.Destination.CcAddresses)+len(in.Destination.BccAddresses) != 0 {
		t.Errorf("Cc/Bcc set; want the one recipient only")
	}

	f.err = errors.New("MessageRejected")
	err := s.Send(t.Context(), codeMessage)
	if err == nil || strings.Contains(err.Error(), "493817") {
		t.Errorf("Send while SES fails = %v; want an error without the body", err)
	}
	if err := s.Send(t.Context(), rmail.Message{To: "x"}); !errors.Is(err, rmail.ErrInvalid) {
		t.Errorf("Send(invalid) = %v; want ErrInvalid before any SES call", err)
	}
	if len(f.in) != 2 {
		t.Errorf("SendEmail called %d times; want 2 (an invalid message never reaches SES)", len(f.in))
	}
}
