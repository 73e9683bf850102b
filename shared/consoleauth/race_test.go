package consoleauth_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// Single use holds under concurrency: requests racing with one e-mail code, or with one TOTP
// code on several temp tokens, get exactly one session; the others are refused (400), not
// served twice. The table's conditional writes decide, so this holds across processes too.
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		race := func(n int, req func(i int) apitest.Response) map[int]int {
			statuses := map[int]int{}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := req(i)
					mu.Lock()
					statuses[r.Status]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			return statuses
		}
		code := e.requestCode("ada@example.com")
		got := race(5, func(int) apitest.Response { return e.verifyCode("ada@example.com", code) })
		if got[http.StatusOK] != 1 || got[http.StatusBadRequest] != 4 {
			t.Errorf("5 concurrent verify-code with one code: statuses %v; want one 200 and four 400", got)
		}

		s := e.signIn("grace@example.com")
		secret, _ := e.enableTOTP(s.Token)
		e.nextWindow()
		temps := make([]string, 4)
		for i := range temps {
			temps[i] = e.challenge("grace@example.com")
		}
		totp := e.code(secret)
		got = race(len(temps), func(i int) apitest.Response {
			return e.Call("POST", "/console/auth/verify-totp", temps[i], apitest.JSON(map[string]string{"code": totp}))
		})
		if got[http.StatusOK] != 1 || got[http.StatusBadRequest] != 3 {
			t.Errorf("4 concurrent verify-totp with one code: statuses %v; want one 200 and three 400", got)
		}
	})
}
