package orgs_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

var rawKey = regexp.MustCompile(`^svc_[0-9A-Za-z]{43}$`)

// docs/api.md §5 API key rules 1-3 and §4.4: a key is svc_ + 43 base62, shown once; the listing
// shows the prefix, never the secret, with created_by_email and last_used_at; live keys are capped
// (Free: 1, 409 past it), sandbox keys are not; the filters environment and include_revoked;
// revocation is effective on the next /v1 request (401), needs no TOTP, and is audited.
func TestIssueListAndRevokeKeys(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		p := "/console/orgs/" + o.OrgID + "/keys"

		r := e.Call("POST", p, ada.token, `{"label":"default env"}`)
		e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue a key without environment")
		sandbox := apitest.Decode[orgs.IssuedKey](t, r)
		if !rawKey.MatchString(sandbox.Key) || sandbox.APIKey.Environment != apikey.Sandbox ||
			sandbox.APIKey.Prefix != sandbox.Key[:apikey.PrefixLen] || sandbox.APIKey.Revoked {
			t.Errorf("issued key = %+v; want svc_ + 43 base62, sandbox by default, prefix its first %d characters", sandbox, apikey.PrefixLen)
		}
		if sandbox.APIKey.CreatedByEmail == nil || *sandbox.APIKey.CreatedByEmail != "ada@example.com" || sandbox.APIKey.CreatedAt == nil {
			t.Errorf("issued key created_by_email %v, created_at %v; want ada@example.com and a time", sandbox.APIKey.CreatedByEmail, sandbox.APIKey.CreatedAt)
		}
		r = e.issueKey(ada, o.OrgID, "live", "production")
		e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "first live key")
		live := apitest.Decode[orgs.IssuedKey](t, r)
		e.ExpectDetail(e.issueKey(ada, o.OrgID, "live", "second"), http.StatusConflict, "second live key on the free plan")
		for range 3 {
			e.Expect(e.issueKey(ada, o.OrgID, "sandbox", "more"), http.StatusCreated, nil, "sandbox keys are uncapped")
		}

		// Use the sandbox key once: last_used_at appears in the listing.
		if r := e.Call("GET", "/v1/events?lat=48.85&lon=2.35", sandbox.Key, ""); r.Status != http.StatusOK {
			t.Fatalf("GET /v1/events with the sandbox key = %s; want 200", r)
		}
		if err := e.keys.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		e.Expect(e.Call("DELETE", p+"/"+live.APIKey.KeyID, ada.token, ""), http.StatusOK, nil, "revoke the live key")
		if r := e.Call("GET", "/v1/events?lat=48.85&lon=2.35", live.Key, ""); r.Status != http.StatusUnauthorized {
			t.Errorf("GET /v1/events with the revoked key = %s; want 401 on the next request", r)
		}
		// Revoking frees the live slot.
		e.Expect(e.issueKey(ada, o.OrgID, "live", "replacement"), http.StatusCreated, nil, "live key after revoking the first")
		e.Expect(e.Call("DELETE", p+"/"+live.APIKey.KeyID, ada.token, ""), http.StatusOK, nil, "revoke a revoked key")
		e.ExpectDetail(e.Call("DELETE", p+"/key_unknown", ada.token, ""), http.StatusNotFound, "revoke an unknown key")

		cases := []struct {
			query       string
			count       int
			env         string
			withRevoked bool
		}{
			{"", 6, "", true},
			{"?environment=live", 2, apikey.Live, true},
			{"?environment=live&include_revoked=false", 1, apikey.Live, false},
			{"?environment=sandbox", 4, apikey.Sandbox, true},
			{"?include_revoked=false", 5, "", false},
		}
		for _, c := range cases {
			r := e.Call("GET", p+c.query, ada.token, "")
			e.Expect(r, http.StatusOK, nil, "list keys"+c.query)
			keys := apitest.Decode[[]orgs.ApiKeyPublic](t, r)
			if len(keys) != c.count {
				t.Errorf("GET keys%s: %d keys; want %d", c.query, len(keys), c.count)
			}
			for _, k := range keys {
				if (c.env != "" && k.Environment != c.env) || (!c.withRevoked && k.Revoked) {
					t.Errorf("GET keys%s listed %+v", c.query, k)
				}
				if k.KeyID == sandbox.APIKey.KeyID && (k.LastUsedAt == nil || k.CreatedByEmail == nil) {
					t.Errorf("used sandbox key listed as %+v; want last_used_at and created_by_email", k)
				}
				if k.KeyID == live.APIKey.KeyID && (!k.Revoked || k.RevokedAt == nil) {
					t.Errorf("revoked key listed as %+v; want revoked with revoked_at", k)
				}
			}
			for _, secret := range []string{sandbox.Key, live.Key} {
				if strings.Contains(string(r.Body), secret) || strings.Contains(string(r.Body), secret[apikey.PrefixLen:]) {
					t.Errorf("GET keys%s shows a secret: %s", c.query, r.Body)
				}
			}
		}
		var issued, revoked int
		for _, a := range e.auditLog(ada, o.OrgID) {
			switch a.Action {
			case orgs.ActionKeyIssued:
				issued++
			case orgs.ActionKeyRevoked:
				revoked++
				if a.Target == nil || *a.Target != live.APIKey.KeyID {
					t.Errorf("key.revoked target = %v; want %s", a.Target, live.APIKey.KeyID)
				}
			}
			for _, v := range a.Detail {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "svc_") && len(s) > apikey.PrefixLen {
					t.Errorf("audit detail holds a key: %+v", a)
				}
			}
		}
		if issued != 6 || revoked != 1 {
			t.Errorf("audit: %d key.issued, %d key.revoked; want 6 and 1 (a second revocation is not a change)", issued, revoked)
		}
	})
}

// docs/api.md §5 API key rule 3 and §10.3: the live-key cap holds under concurrency: two live
// keys issued at once on the Free plan give exactly one 201 and one 409.
func TestConcurrentLiveKeysOnFree(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		statuses := make([]int, 2)
		var wg sync.WaitGroup
		for i := range statuses {
			wg.Go(func() { statuses[i] = e.issueKey(ada, o.OrgID, "live", "racer").Status })
		}
		wg.Wait()
		if !(statuses[0] == 201 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 201) {
			t.Errorf("two live keys at once on Free: statuses %v; want one 201 and one 409", statuses)
		}
		r := e.Call("GET", "/console/orgs/"+o.OrgID+"/keys?environment=live", ada.token, "")
		if keys := apitest.Decode[[]orgs.ApiKeyPublic](t, r); len(keys) != 1 {
			t.Errorf("%d live keys; want 1", len(keys))
		}
	})
}

// docs/api.md §5 API key rule 4 and §10.3: an owner whose account has TOTP issues a key only with
// a valid totp_code (missing or wrong: 403), consumed on use (a replay: 403); revocation needs
// no code. The other owners are e-mailed the label, environment, prefix and issuer, never the
// secret; the issuer and members are not.
func TestKeyIssuanceStepUpAndNotice(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		e.join(ada, o.OrgID, "bob@example.com", orgs.RoleOwner)
		e.join(ada, o.OrgID, "cat@example.com", orgs.RoleMember)
		secret := e.enableTOTP(ada)
		p := "/console/orgs/" + o.OrgID + "/keys"
		wrong := "000000"
		if wrong == e.totpCode(secret) {
			wrong = "111111"
		}
		e.Run(t, apitest.As("an owner with TOTP:", ada.token, http.StatusForbidden, []apitest.Scenario{
			{Name: "issue without totp_code", Method: "POST", Path: p, Body: `{"label":"k","environment":"sandbox"}`},
			{Name: "issue with a null totp_code", Method: "POST", Path: p, Body: `{"label":"k","environment":"sandbox","totp_code":null}`},
			{Name: "issue with a wrong totp_code", Method: "POST", Path: p,
				Body: apitest.JSON(map[string]string{"label": "k", "environment": "sandbox", "totp_code": wrong})},
		}))
		code := e.totpCode(secret)
		r := e.Call("POST", p, ada.token, apitest.JSON(map[string]string{"label": "fleet tablets", "environment": "sandbox", "totp_code": code}))
		e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue with a valid totp_code")
		key := apitest.Decode[orgs.IssuedKey](t, r)
		e.ExpectDetail(e.Call("POST", p, ada.token, apitest.JSON(map[string]string{"label": "k", "environment": "sandbox", "totp_code": code})),
			http.StatusForbidden, "issue with a replayed totp_code")
		e.Expect(e.Call("DELETE", p+"/"+key.APIKey.KeyID, ada.token, ""), http.StatusOK, nil, "revoke without a code")

		notices := func(addr string) []string {
			var out []string
			for _, m := range e.inbox.To(addr) {
				if strings.Contains(m.Subject, "API key") {
					out = append(out, m.Text)
				}
			}
			return out
		}
		bobs := notices("bob@example.com")
		if len(bobs) != 1 {
			t.Fatalf("bob (another owner) got %d key notices; want 1", len(bobs))
		}
		for _, want := range []string{"fleet tablets", "sandbox", key.APIKey.Prefix, "ada@example.com"} {
			if !strings.Contains(bobs[0], want) {
				t.Errorf("key notice lacks %q:\n%s", want, bobs[0])
			}
		}
		if strings.Contains(bobs[0], key.Key[apikey.PrefixLen:]) {
			t.Errorf("key notice holds the secret:\n%s", bobs[0])
		}
		if n := len(notices("ada@example.com")) + len(notices("cat@example.com")); n != 0 {
			t.Errorf("the issuer and the member got %d key notices; want 0", n)
		}
	})
}

// docs/api.md §10.3: key issuance is capped at 30 per organisation per hour; past it 429 with
// Retry-After.
func TestKeyIssuanceCap(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		for range 30 {
			e.Expect(e.issueKey(ada, o.OrgID, "sandbox", "k"), http.StatusCreated, nil, "sandbox key")
		}
		r := e.issueKey(ada, o.OrgID, "sandbox", "k")
		e.ExpectDetail(r, http.StatusTooManyRequests, "31st key in an hour")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
	})
}
