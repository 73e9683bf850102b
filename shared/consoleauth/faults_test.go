package consoleauth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/store/dynamodb"
	"github.com/roadevents/roadevents/shared/store/dynamodb/faulttest"
)

// docs/operations.md §1 and docs/api.md §4.2: a sign-in whose writes the table refuses answers 503
// and leaves its e-mailed code usable, so that the client's retry signs in; the code is used
// up only with the session (or the TOTP challenge) it buys. For a new address, an account
// already signed in, and an account with TOTP.
func TestSignInRefusedByTheTableKeepsTheCode(t *testing.T) {
	t.Parallel()
	for _, who := range []string{"new", "known", "totp"} {
		t.Run(who, func(t *testing.T) {
			t.Parallel()
			tab := faulttest.NewTable(t, dynamodb.Options{BaseDelay: time.Millisecond})
			e := newEnv(t, tab.Table)
			addr := who + "@example.com"
			if who != "new" {
				s := consoletest.SignIn(e.Client, e.inbox, addr)
				if who == "totp" {
					consoletest.EnableTOTP(e.Client, s.Token, e.clock.Now())
				}
			}
			e.Expect(e.Call("POST", "/console/auth/request-code", "", apitest.JSON(map[string]string{"email": addr})),
				http.StatusOK, nil, "request a code")
			body := apitest.JSON(map[string]string{"email": addr, "code": e.inbox.LastCode(t, addr)})

			// Every write of a sign-in after the count of the try is a transaction.
			tab.Faults.Set(faulttest.Fault{Kind: faulttest.Throttle, Ops: []string{"TransactWriteItems"}})
			r := e.Call("POST", "/console/auth/verify-code", "", body)
			e.ExpectDetail(r, http.StatusServiceUnavailable, "verify-code while the table throttles its transactions")
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("verify-code's 503 has no Retry-After")
			}
			tab.Faults.Clear()
			e.Expect(e.Call("POST", "/console/auth/verify-code", "", body), http.StatusOK, nil, "verify-code again with the same code")
		})
	}
}
