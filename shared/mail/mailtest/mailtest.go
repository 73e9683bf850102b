// Package mailtest reads the messages package mail writes (an RFC 5322 file with a
// multipart/alternative body, docs/api.md §10.4) as a person's mail reader would, for tests only.
package mailtest

import (
	"bytes"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"testing"
)

// Part is one decoded part of a multipart message.
type Part struct {
	ContentType string
	Body        string
}

// Parse reads an RFC 5322 message with net/mail and its multipart/alternative body with
// mime/multipart, which also undoes the quoted-printable encoding; it fails the test when
// either is malformed.
func Parse(t testing.TB, raw []byte) (*mail.Message, []Part) {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("net/mail.ReadMessage = %v; want a valid RFC 5322 message", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("Content-Type = %q (%v); want multipart/alternative", msg.Header.Get("Content-Type"), err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var parts []Part
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("NextPart = %v", err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			t.Fatalf("read part = %v", err)
		}
		parts = append(parts, Part{p.Header.Get("Content-Type"), string(b)})
	}
	return msg, parts
}
