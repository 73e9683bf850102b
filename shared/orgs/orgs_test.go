package orgs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.3 POST, GET and PATCH /console/orgs: the creator is the owner, a new organisation
// is on the free plan (docs/api.md §10.3), the record carries the caller's role, and a rename is an
// owner act recorded as org.updated.
func TestCreateGetAndRenameOrganisation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		if o.Role != orgs.RoleOwner || o.Plan != orgs.FreePlan || o.Name != "Ada Fleet" || o.OrgID == "" {
			t.Fatalf("created organisation = %+v; want role owner, plan free, name Ada Fleet", o)
		}
		r := e.Call("GET", "/console/orgs/"+o.OrgID, ada.token, "")
		e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "get organisation")
		if got := apitest.Decode[orgs.Organisation](t, r); got != o {
			t.Errorf("GET organisation = %+v; want %+v", got, o)
		}
		r = e.Call("PATCH", "/console/orgs/"+o.OrgID, ada.token, `{"name":"Ada Logistics"}`)
		e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "rename organisation")
		if got := apitest.Decode[orgs.Organisation](t, r); got.Name != "Ada Logistics" || got.Role != orgs.RoleOwner {
			t.Errorf("PATCH organisation = %+v; want name Ada Logistics, role owner", got)
		}
		r = e.Call("GET", "/console/orgs/"+o.OrgID, ada.token, "")
		if got := apitest.Decode[orgs.Organisation](t, r); got.Name != "Ada Logistics" {
			t.Errorf("GET after rename: name %q; want Ada Logistics", got.Name)
		}
		log := e.auditLog(ada, o.OrgID)
		if len(log) != 2 || log[0].Action != orgs.ActionOrgUpdated || log[1].Action != orgs.ActionOrgCreated {
			t.Errorf("audit log = %+v; want org.updated then org.created (newest first)", log)
		}
	})
}

// docs/api.md §8 and §7: organisation name 1..80 characters, else 422 in the validation shape; a
// missing session is 401 (docs/api.md §5).
func TestOrganisationValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tables.Embedded(t))
	ada := e.signIn("ada@example.com")
	o := e.createOrg(ada, "Ada Fleet")
	cases := []struct {
		name, method, path, body string
		want                     int
		loc                      string
	}{
		{"empty name", "POST", "/console/orgs", `{"name":""}`, 422, "name"},
		{"name of 81 characters", "POST", "/console/orgs", `{"name":"` + strings.Repeat("x", 81) + `"}`, 422, "name"},
		{"missing name", "POST", "/console/orgs", `{}`, 422, "name"},
		{"unknown field", "POST", "/console/orgs", `{"name":"x","plan":"team"}`, 422, "plan"},
		{"rename to empty", "PATCH", "/console/orgs/" + o.OrgID, `{"name":""}`, 422, "name"},
		{"invite with a bad address", "POST", "/console/orgs/" + o.OrgID + "/members", `{"email":"nope"}`, 422, "email"},
		{"invite with an unknown role", "POST", "/console/orgs/" + o.OrgID + "/members", `{"email":"b@example.com","role":"admin"}`, 422, "role"},
		{"key label of 121 characters", "POST", "/console/orgs/" + o.OrgID + "/keys", `{"label":"` + strings.Repeat("x", 121) + `"}`, 422, "label"},
		{"key in an unknown environment", "POST", "/console/orgs/" + o.OrgID + "/keys", `{"label":"k","environment":"prod"}`, 422, "environment"},
		{"totp_code of 17 characters", "POST", "/console/orgs/" + o.OrgID + "/keys", `{"label":"k","totp_code":"` + strings.Repeat("1", 17) + `"}`, 422, "totp_code"},
		{"token of 201 characters", "POST", "/console/invitations/accept", `{"token":"` + strings.Repeat("t", 201) + `"}`, 422, "token"},
		{"role update to admin", "PATCH", "/console/orgs/" + o.OrgID + "/members/" + ada.id, `{"role":"admin"}`, 422, "role"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.with(t).Call(c.method, c.path, ada.token, c.body)
			if r.Status != c.want || !strings.Contains(string(r.Body), `"`+c.loc+`"`) {
				t.Errorf("%s %s %s = %s; want %d naming %q", c.method, c.path, c.body, r, c.want, c.loc)
			}
		})
	}
	for _, q := range []string{"limit=0", "limit=501", "limit=x"} {
		if r := e.Call("GET", "/console/orgs/"+o.OrgID+"/audit?"+q, ada.token, ""); r.Status != 422 {
			t.Errorf("GET audit?%s = %s; want 422", q, r)
		}
	}
	if r := e.Call("GET", "/console/orgs/"+o.OrgID+"/keys?environment=prod", ada.token, ""); r.Status != 422 {
		t.Errorf("GET keys?environment=prod = %s; want 422", r)
	}
	if r := e.Call("GET", "/console/orgs/"+o.OrgID, "", ""); r.Status != 401 || r.Header.Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("GET organisation without a session = %s; want 401 with WWW-Authenticate: Bearer", r)
	}
}

// docs/api.md §11.2: an organisation's name, on creation and on rename, and a key's label refuse
// control characters, bidirectional marks and text with nothing visible (they reach the
// console and invitation e-mails), with a 422 value_error at the field; other scripts, accents
// and emoji are kept as sent. A label stored before the rule still lists.
func TestNamesAndLabelsArePrintable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tables.Embedded(t))
	ada := e.signIn("ada@example.com")
	o := e.createOrg(ada, "Ada Fleet")
	fields := []struct {
		name, method, path, member string
	}{
		{"create", "POST", "/console/orgs", "name"},
		{"rename", "PATCH", "/console/orgs/" + o.OrgID, "name"},
		{"key label", "POST", "/console/orgs/" + o.OrgID + "/keys", "label"},
	}
	for _, f := range fields {
		for what, bad := range apitest.UnprintableNames {
			t.Run(f.name+" "+what, func(t *testing.T) {
				c := e.with(t)
				items := c.ExpectProblems(c.Call(f.method, f.path, ada.token, apitest.JSON(map[string]string{f.member: bad})), f.name+" "+what)
				if len(items) != 1 || items[0].Type != "value_error" || apitest.JSON(items[0].Loc) != `["body","`+f.member+`"]` {
					t.Errorf("%s with %q: 422 items %+v; want one value_error at [\"body\",%q]", f.name, bad, items, f.member)
				}
			})
		}
	}
	for _, good := range apitest.PrintableNames {
		if got := e.createOrg(ada, good); got.Name != good {
			t.Errorf("created organisation name %q; want %q as sent", got.Name, good)
		}
		r := e.Call("PATCH", "/console/orgs/"+o.OrgID, ada.token, apitest.JSON(map[string]string{"name": good}))
		e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "rename to "+good)
		if got := apitest.Decode[orgs.Organisation](t, r).Name; got != good {
			t.Errorf("renamed organisation name %q; want %q as sent", got, good)
		}
		r = e.issueKey(ada, o.OrgID, "sandbox", good)
		e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "key labelled "+good)
		if got := apitest.Decode[orgs.IssuedKey](t, r).APIKey.Label; got != good {
			t.Errorf("key label %q; want %q as sent", got, good)
		}
	}

	// A label written before the rule (here into the stored key's listing item, whose layout
	// the apikey package documents) is still listed.
	const old = "old\nlabel"
	_, k, err := e.keys.Issue(t.Context(), apikey.IssueRequest{OrgID: o.OrgID, Environment: apikey.Sandbox, Label: "old"})
	if err != nil {
		t.Fatal(err)
	}
	listing := store.Key{PK: "org#" + o.OrgID, SK: "apikey#" + k.KeyID}
	if _, err := e.tab.Table.Update(t.Context(), listing, store.Update{Set: map[string]any{"label": old}}, store.IfExists()); err != nil {
		t.Fatal(err)
	}
	r := e.Call("GET", "/console/orgs/"+o.OrgID+"/keys", ada.token, "")
	e.Expect(r, http.StatusOK, nil, "list keys with an old label")
	found := false
	for _, k := range apitest.Decode[[]orgs.ApiKeyPublic](t, r) {
		found = found || k.Label == old
	}
	if !found {
		t.Errorf("keys listed %s; want the key labelled %q among them", r.Body, old)
	}
}

// docs/api.md §10.3: organisation creation is capped at 10 per user per day; past it 429 with
// Retry-After, and the next day allows more.
func TestOrganisationCreationCap(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		for i := range 10 {
			e.createOrg(ada, "Org "+string(rune('A'+i)))
		}
		r := e.Call("POST", "/console/orgs", ada.token, `{"name":"One too many"}`)
		e.ExpectDetail(r, http.StatusTooManyRequests, "11th organisation in a day")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After (docs/api.md §10.3)")
		}
		// Another user has a budget of their own.
		e.createOrg(e.signIn("bob@example.com"), "Bob Fleet")
		e.clock.Advance(24 * time.Hour)
		e.createOrg(ada, "Next day")
	})
}

// newService builds the organisations directly on tab, for the methods billing calls.
func newService(t *testing.T, tab tables.Table, caps func(string) (int, int)) (*orgs.Service, *consoleauth.Service) {
	t.Helper()
	sealer, err := seal.NewAESGCM(make([]byte, seal.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	mailbox := &inbox{}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	auth, err := consoleauth.New(tab.Table, consoleauth.Options{Clock: tab.Clock, Mailer: mailbox, Sealer: sealer,
		HashKey: make([]byte, consoleauth.MinHashKeyBytes), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	s, err := orgs.New(tab.Table, orgs.Options{Clock: tab.Clock, Logger: logger, Mailer: mailbox,
		Keys: apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}), Users: auth, TOTP: auth,
		ConsoleURL: consoleURL, Caps: caps})
	if err != nil {
		t.Fatal(err)
	}
	return s, auth
}

// What billing relies on: Access gives role and plan of a member, ok=false for a
// non-member or an unknown organisation; SetPlan moves the organisation to a plan, whose
// caps (Options.Caps) then apply; an unknown organisation is ErrNotFound.
func TestAccessAndSetPlan(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ctx := context.Background()
		caps := func(plan string) (int, int) {
			if plan == "team" {
				return 3, 10
			}
			return 1, 3
		}
		s, _ := newService(t, tab, caps)
		o, err := s.CreateOrg(ctx, orgs.Actor{UserID: "usr_ada", Email: "ada@example.com"}, "Ada Fleet")
		if err != nil {
			t.Fatal(err)
		}
		role, plan, ok, err := s.Access(ctx, o.OrgID, "usr_ada")
		if err != nil || !ok || role != orgs.RoleOwner || plan != orgs.FreePlan {
			t.Errorf("Access(owner) = %q, %q, %v, %v; want owner, free, true, nil", role, plan, ok, err)
		}
		for _, c := range []struct{ org, user string }{{o.OrgID, "usr_bob"}, {"org_unknown", "usr_ada"}} {
			if role, plan, ok, err := s.Access(ctx, c.org, c.user); err != nil || ok || role != "" || plan != "" {
				t.Errorf("Access(%s, %s) = %q, %q, %v, %v; want ok false", c.org, c.user, role, plan, ok, err)
			}
		}
		if err := s.SetPlan(ctx, o.OrgID, "team"); err != nil {
			t.Fatal(err)
		}
		if _, plan, _, _ := s.Access(ctx, o.OrgID, "usr_ada"); plan != "team" {
			t.Errorf("plan after SetPlan(team) = %q; want team", plan)
		}
		if err := s.SetPlan(ctx, "org_unknown", "team"); !errors.Is(err, orgs.ErrNotFound) {
			t.Errorf("SetPlan(unknown organisation) = %v; want ErrNotFound", err)
		}
	})
}

// docs/api.md §5 API key rule 3 and §10.3: the live-key cap follows the organisation's plan
// through Options.Caps (here team allows 2).
func TestLiveKeyCapFollowsPlan(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnvCaps(t, tab, func(plan string) (int, int) {
			if plan == "team" {
				return 2, 10
			}
			return 1, 3
		})
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		e.Expect(e.issueKey(ada, o.OrgID, "live", "one"), http.StatusCreated, orgs.IssuedKeySchema, "first live key")
		e.ExpectDetail(e.issueKey(ada, o.OrgID, "live", "two"), http.StatusConflict, "second live key on free")
		s, _ := newService(t, tab, nil)
		if err := s.SetPlan(t.Context(), o.OrgID, "team"); err != nil {
			t.Fatal(err)
		}
		e.Expect(e.issueKey(ada, o.OrgID, "live", "two"), http.StatusCreated, orgs.IssuedKeySchema, "second live key on team")
		e.ExpectDetail(e.issueKey(ada, o.OrgID, "live", "three"), http.StatusConflict, "third live key on team")
	})
}
