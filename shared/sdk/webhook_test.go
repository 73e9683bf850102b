package sdk_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/sdk"
	"github.com/roadevents/roadevents/shared/webhooks/signature"
)

const deliveryBody = `{"id":"dlv_1","kind":"alert.created","created_at":"2040-01-01T12:00:00Z","environment":"live",` +
	`"data":{"event":{"event_id":"ev_aaaaaaaaaaaaaaaaaaaaaaaaaa","type":"accident"},"rule":{"rule_id":"ar_1","name":"A9"}}}`

// docs/webhooks.md §2, §3: the receiver takes a delivery signed with the endpoint's secret (or,
// during a rotation, the previous one), once however often it comes; it refuses a forged or a
// stale one with 400 without handling it; a delivery its handler fails is answered 500, so
// that the service sends it again, and handled when it comes again.
func TestReceiver(t *testing.T) {
	now := time.Date(2040, 1, 1, 12, 0, 0, 0, time.UTC)
	var handled []string
	fail := true
	rc := &sdk.Receiver{Secrets: []string{"whsec_new", "whsec_old"}, Now: func() time.Time { return now },
		Handle: func(_ *http.Request, d sdk.Delivery) error {
			if d.Kind == "event.ended" && fail {
				fail = false
				return fmt.Errorf("disk full")
			}
			handled = append(handled, d.ID+" "+d.Kind+" "+d.Data.Event.EventID)
			return nil
		}}
	send := func(header, body string) int {
		req := httptest.NewRequest("POST", "/hooks", strings.NewReader(body))
		req.Header.Set(signature.Header, header)
		rec := httptest.NewRecorder()
		rc.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tc := range []struct {
		name, header, body string
		want               int
	}{
		{"signed with the new secret", signature.Sign(now, []byte(deliveryBody), "whsec_new"), deliveryBody, 200},
		{"the same again", signature.Sign(now, []byte(deliveryBody), "whsec_new"), deliveryBody, 200},
		{"another, signed by the old secret", signature.Sign(now, []byte(strings.Replace(deliveryBody, "dlv_1", "dlv_2", 1)), "whsec_old"), strings.Replace(deliveryBody, "dlv_1", "dlv_2", 1), 200},
		{"a forged signature", signature.Sign(now, []byte(deliveryBody), "whsec_guess"), strings.Replace(deliveryBody, "dlv_1", "dlv_3", 1), 400},
		{"a body changed after signing", signature.Sign(now, []byte(deliveryBody), "whsec_new"), strings.Replace(deliveryBody, "A9", "A8", 1), 400},
		{"a replay of an hour ago", signature.Sign(now.Add(-time.Hour), []byte(deliveryBody), "whsec_new"), deliveryBody, 400},
		{"no header", "", deliveryBody, 400},
	} {
		if got := send(tc.header, tc.body); got != tc.want {
			t.Errorf("%s: %d; want %d", tc.name, got, tc.want)
		}
	}
	ended := strings.Replace(strings.Replace(deliveryBody, "dlv_1", "dlv_4", 1), "alert.created", "event.ended", 1)
	if got := send(signature.Sign(now, []byte(ended), "whsec_new"), ended); got != 500 {
		t.Errorf("a delivery its handler failed: %d; want 500", got)
	}
	if got := send(signature.Sign(now, []byte(ended), "whsec_new"), ended); got != 200 {
		t.Errorf("the failed delivery again: %d; want 200", got)
	}
	want := []string{"dlv_1 alert.created ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", "dlv_2 alert.created ev_aaaaaaaaaaaaaaaaaaaaaaaaaa", "dlv_4 event.ended ev_aaaaaaaaaaaaaaaaaaaaaaaaaa"}
	if strings.Join(handled, "|") != strings.Join(want, "|") {
		t.Errorf("handled %v; want %v", handled, want)
	}
}
