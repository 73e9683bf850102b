package consoletest_test

import (
	"errors"
	"testing"

	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/mail"
)

// TestLastCode: the code is the latest sign-in code sent to the address; other addresses'
// messages and messages that are not sign-in codes (an invitation with digits) are passed by.
func TestLastCode(t *testing.T) {
	t.Parallel()
	var b consoletest.Inbox
	for _, m := range []mail.Message{
		{To: "ada@example.com", Subject: "Your roadevents sign-in code", Text: "Your code is 111111."},
		{To: "ada@example.com", Subject: "Your roadevents sign-in code", Text: "Your code is 222222."},
		{To: "bob@example.com", Subject: "Your roadevents sign-in code", Text: "Your code is 333333."},
		{To: "ada@example.com", Subject: "You are invited", Text: "Join before 444444."},
	} {
		if err := b.Send(t.Context(), m); err != nil {
			t.Fatalf("Send(%+v) = %v", m, err)
		}
	}
	if got := b.LastCode(t, "ada@example.com"); got != "222222" {
		t.Errorf("LastCode(ada) = %q; want 222222", got)
	}
	if got := b.Count(); got != 4 {
		t.Errorf("Count = %d; want 4", got)
	}
}

// TestSessions: a listed token is its caller, anything else (and every temp token) is
// consoleauth.ErrUnauthenticated, as the real store answers.
func TestSessions(t *testing.T) {
	t.Parallel()
	s := consoletest.Sessions{"ses_a": {User: consoleauth.User{ID: "usr_a"}}}
	if c, err := s.Authenticate(t.Context(), "ses_a"); err != nil || c.User.ID != "usr_a" {
		t.Errorf("Authenticate(ses_a) = %+v, %v; want usr_a", c, err)
	}
	if _, err := s.Authenticate(t.Context(), "ses_b"); !errors.Is(err, consoleauth.ErrUnauthenticated) {
		t.Errorf("Authenticate(ses_b) = %v; want ErrUnauthenticated", err)
	}
	if _, err := s.AuthenticateTemp(t.Context(), "ses_a"); !errors.Is(err, consoleauth.ErrUnauthenticated) {
		t.Errorf("AuthenticateTemp(ses_a) = %v; want ErrUnauthenticated", err)
	}
}
