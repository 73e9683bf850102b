package orgs_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/billing"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.3 ("resources are resolved within the caller's organisation") and §4.4:
// organisation A's traffic, keys, members, invitations and audit entries never appear in any answer
// to organisation B, read by B's owner on every route that reads B (usage and vitality of both
// environments, reputation, billing summary, keys, members, audit, the organisation). A's own
// answers show the traffic, so the check on B can fail. Both adapters.
func TestTenantDataStaysInItsOrganisation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnvGroups(t, tab, nil) // every group
		a, b := e.fixture("alpha"), e.fixture("bravo")

		// A gets live traffic: a live key reads /v1/events.
		r := e.issueKey(a.owner, a.org.OrgID, "live", "alpha live")
		e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue alpha's live key")
		live := apitest.Decode[orgs.IssuedKey](t, r)
		r = e.Call("GET", "/v1/events?lat=52.52&lon=13.405", live.Key, "")
		e.Expect(r, http.StatusOK, nil, "alpha reads events")
		if err := e.keys.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}

		pa := "/console/orgs/" + a.org.OrgID
		r = e.Call("GET", pa+"/usage?window=7d&environment=live", a.owner.token, "")
		e.Expect(r, http.StatusOK, consoleusage.SeriesSchema, "alpha's usage")
		if got := apitest.Decode[consoleusage.Series](t, r).Totals.Reads; got != 1 {
			t.Fatalf("alpha's live reads = %d; want 1 (else the checks on bravo prove nothing)", got)
		}
		r = e.Call("GET", pa+"/vitality", a.owner.token, "")
		e.Expect(r, http.StatusOK, consoleusage.VitalitySchema, "alpha's vitality")
		if v := apitest.Decode[consoleusage.Vitality](t, r); !v.HasTraffic || v.LastUsedKeyID == nil || *v.LastUsedKeyID != live.APIKey.KeyID {
			t.Fatalf("alpha's vitality = %+v; want traffic by %s", v, live.APIKey.KeyID)
		}

		// Nothing that identifies A may appear in any answer to B.
		marks := []string{a.org.OrgID, a.keyID, live.APIKey.KeyID, live.APIKey.Prefix, a.invite.InviteID,
			a.owner.id, a.member.id, "alpha"}
		pb := "/console/orgs/" + b.org.OrgID
		for _, c := range []struct {
			path  string
			check func(t *testing.T, r apitest.Response)
		}{
			{pb, nil},
			{pb + "/members", nil},
			{pb + "/keys", nil},
			{pb + "/audit?limit=200", nil},
			{pb + "/usage?window=90d&environment=live", func(t *testing.T, r apitest.Response) {
				e.with(t).Expect(r, http.StatusOK, consoleusage.SeriesSchema, "bravo's live usage")
				if s := apitest.Decode[consoleusage.Series](t, r); s.Totals != (consoleusage.Totals{}) || s.OrgID != b.org.OrgID {
					t.Errorf("bravo's live usage = org %s, totals %+v; want %s, zeros", s.OrgID, s.Totals, b.org.OrgID)
				}
			}},
			{pb + "/usage?window=90d&environment=sandbox", func(t *testing.T, r apitest.Response) {
				if s := apitest.Decode[consoleusage.Series](t, r); s.Totals != (consoleusage.Totals{}) {
					t.Errorf("bravo's sandbox usage totals = %+v; want zeros", s.Totals)
				}
			}},
			{pb + "/vitality?environment=live", func(t *testing.T, r apitest.Response) {
				e.with(t).Expect(r, http.StatusOK, consoleusage.VitalitySchema, "bravo's vitality")
				v := apitest.Decode[consoleusage.Vitality](t, r)
				if v.HasTraffic || v.LastUsedAt != nil || v.LastUsedKeyID != nil || v.Today != (consoleusage.Totals{}) || len(v.Keys) != 0 {
					t.Errorf("bravo's live vitality = %+v; want no traffic, nulls, zeros, no live keys", v)
				}
			}},
			{pb + "/vitality?environment=sandbox", nil},
			{pb + "/reputation", nil},
			{pb + "/billing", func(t *testing.T, r apitest.Response) {
				e.with(t).Expect(r, http.StatusOK, billing.BillingSummarySchema, "bravo's billing summary")
				if s := apitest.Decode[billing.Summary](t, r); s.Totals != (consoleusage.Totals{}) || s.OrgID != b.org.OrgID {
					t.Errorf("bravo's billing = org %s, totals %+v; want %s, zeros", s.OrgID, s.Totals, b.org.OrgID)
				}
			}},
		} {
			t.Run(strings.TrimPrefix(c.path, pb), func(t *testing.T) {
				e := e.with(t)
				for _, u := range []user{b.owner, b.member} {
					r := e.Call("GET", c.path, u.token, "")
					if r.Status != http.StatusOK {
						t.Fatalf("GET %s as %s = %s; want 200", c.path, u.email, r)
					}
					for _, m := range marks {
						if strings.Contains(string(r.Body), m) {
							t.Errorf("GET %s as %s holds %q of alpha: %s", c.path, u.email, m, r.Body)
						}
					}
					if c.check != nil {
						c.check(t, r)
					}
				}
			})
		}
	})
}
