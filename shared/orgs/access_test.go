package orgs_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// fixture is one organisation with an owner, a member, a pending invitation and a key.
type fixture struct {
	org    orgs.Organisation
	owner  user
	member user
	invite orgs.Invitation
	keyID  string
}

func (e *env) fixture(prefix string) fixture {
	e.T.Helper()
	f := fixture{owner: e.signIn(prefix + "-owner@example.com")}
	f.org = e.createOrg(f.owner, prefix+" Fleet")
	f.member = e.join(f.owner, f.org.OrgID, prefix+"-member@example.com", orgs.RoleMember)
	f.invite = e.invite(f.owner, f.org.OrgID, prefix+"-invitee@example.com", orgs.RoleMember)
	r := e.issueKey(f.owner, f.org.OrgID, "sandbox", prefix+" key")
	e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue "+prefix+" key")
	f.keyID = apitest.Decode[orgs.IssuedKey](e.T, r).APIKey.KeyID
	return f
}

type request struct {
	method, path, body string
}

// orgRoutes is every /console/orgs/{org_id}/... route, with the resource ids given.
func orgRoutes(org, userID, inviteID, keyID string) []request {
	p := "/console/orgs/" + org
	return []request{
		{"GET", p, ""},
		{"PATCH", p, `{"name":"Renamed"}`},
		{"GET", p + "/members", ""},
		{"POST", p + "/members", `{"email":"new@example.com"}`},
		{"PATCH", p + "/members/" + userID, `{"role":"owner"}`},
		{"DELETE", p + "/members/" + userID, ""},
		{"POST", p + "/leave", ""},
		{"DELETE", p + "/invitations/" + inviteID, ""},
		{"POST", p + "/invitations/" + inviteID + "/resend", ""},
		{"GET", p + "/audit", ""},
		{"GET", p + "/keys", ""},
		{"POST", p + "/keys", `{"label":"stolen","environment":"sandbox"}`},
		{"DELETE", p + "/keys/" + keyID, ""},
	}
}

// spec 4.3 and 7: organisation routes resolve the caller's membership first, so a caller of
// another organisation gets 404 on every route of this one, whatever ids they name, and a
// resource id of another organisation is not found inside one's own (also 404). Nothing of
// the other organisation changes.
func TestOtherOrganisationIsNotFound(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		a, b := e.fixture("a"), e.fixture("b")
		for _, pair := range []struct {
			name        string
			caller      user
			self, other fixture
		}{
			{"a's owner in b", a.owner, a, b},
			{"b's owner in a", b.owner, b, a},
			{"a's member in b", a.member, a, b},
			{"b's member in a", b.member, b, a},
		} {
			// Every route of the other organisation, with its own ids.
			for _, rq := range orgRoutes(pair.other.org.OrgID, pair.other.member.id, pair.other.invite.InviteID, pair.other.keyID) {
				r := e.Call(rq.method, rq.path, pair.caller.token, rq.body)
				if r.Status != http.StatusNotFound || !strings.Contains(string(r.Body), `"detail"`) {
					t.Errorf("%s: %s %s = %s; want 404 {detail}", pair.name, rq.method, rq.path, r)
				}
			}
		}
		// An owner naming the other organisation's member, invitation and key inside their own.
		p := "/console/orgs/" + a.org.OrgID
		for _, rq := range []request{
			{"PATCH", p + "/members/" + b.member.id, `{"role":"owner"}`},
			{"DELETE", p + "/members/" + b.member.id, ""},
			{"DELETE", p + "/invitations/" + b.invite.InviteID, ""},
			{"POST", p + "/invitations/" + b.invite.InviteID + "/resend", ""},
			{"DELETE", p + "/keys/" + b.keyID, ""},
		} {
			if r := e.Call(rq.method, rq.path, a.owner.token, rq.body); r.Status != http.StatusNotFound {
				t.Errorf("a's owner: %s %s (b's id) = %s; want 404", rq.method, rq.path, r)
			}
		}
		// b is untouched: its name, its members, its invitation and its key.
		if got := e.members(b.owner, b.org.OrgID); len(got.Members) != 2 || len(got.Invitations) != 1 || got.Invitations[0].InviteID != b.invite.InviteID {
			t.Errorf("b's members after a's attempts = %+v; want 2 members and its invitation", got)
		}
		r := e.Call("GET", "/console/orgs/"+b.org.OrgID+"/keys", b.owner.token, "")
		if keys := apitest.Decode[[]orgs.ApiKeyPublic](t, r); len(keys) != 1 || keys[0].Revoked {
			t.Errorf("b's keys after a's attempts = %+v; want its one unrevoked key", keys)
		}
		r = e.Call("GET", "/console/orgs/"+b.org.OrgID, b.owner.token, "")
		if got := apitest.Decode[orgs.Organisation](t, r); got.Name != "b Fleet" {
			t.Errorf("b's name = %q; want b Fleet", got.Name)
		}
		// An unknown organisation is the same 404.
		if r := e.Call("GET", "/console/orgs/org_unknown", a.owner.token, ""); r.Status != http.StatusNotFound {
			t.Errorf("GET unknown organisation = %s; want 404", r)
		}
	})
}

// spec 5 and 7: every console-orgs route needs a session: without one, or with an API key,
// 401 with WWW-Authenticate: Bearer, before anything else is looked at.
func TestRoutesNeedASession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tables.Embedded(t))
	f := e.fixture("a")
	r := e.issueKey(f.owner, f.org.OrgID, "sandbox", "not a session")
	apiKey := apitest.Decode[orgs.IssuedKey](t, r).Key
	routes := append(orgRoutes(f.org.OrgID, f.member.id, f.invite.InviteID, f.keyID),
		request{"POST", "/console/orgs", `{"name":"x"}`}, request{"POST", "/console/invitations/accept", `{"token":"x"}`})
	for _, token := range []string{"", apiKey, "ses_" + strings.Repeat("A", 43)} {
		for _, rq := range routes {
			r := e.Call(rq.method, rq.path, token, rq.body)
			if r.Status != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%s %s with credential %.8q = %s; want 401 with WWW-Authenticate: Bearer", rq.method, rq.path, token, r)
			}
		}
	}
}

// contract 3 "Roles": a member asking for any owner act gets 403 and nothing changes; a
// member may read everything (organisation, members, keys, audit) and leave.
func TestMemberAskingOwnerActsIsForbidden(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		f := e.fixture("a")
		p := "/console/orgs/" + f.org.OrgID
		for _, rq := range []request{
			{"PATCH", p, `{"name":"Renamed"}`},
			{"POST", p + "/members", `{"email":"new@example.com"}`},
			{"PATCH", p + "/members/" + f.owner.id, `{"role":"member"}`},
			{"PATCH", p + "/members/" + f.member.id, `{"role":"owner"}`},
			{"DELETE", p + "/members/" + f.owner.id, ""},
			{"DELETE", p + "/invitations/" + f.invite.InviteID, ""},
			{"POST", p + "/invitations/" + f.invite.InviteID + "/resend", ""},
			{"POST", p + "/keys", `{"label":"mine","environment":"sandbox"}`},
			{"DELETE", p + "/keys/" + f.keyID, ""},
		} {
			r := e.Call(rq.method, rq.path, f.member.token, rq.body)
			if r.Status != http.StatusForbidden || !strings.Contains(string(r.Body), `"detail"`) {
				t.Errorf("member: %s %s = %s; want 403 {detail}", rq.method, rq.path, r)
			}
		}
		for _, path := range []string{p, p + "/members", p + "/keys", p + "/audit"} {
			if r := e.Call("GET", path, f.member.token, ""); r.Status != http.StatusOK {
				t.Errorf("member: GET %s = %s; want 200", path, r)
			}
		}
		got := e.members(f.owner, f.org.OrgID)
		if len(got.Members) != 2 || len(got.Invitations) != 1 {
			t.Fatalf("members after the member's attempts = %+v; want 2 members, 1 invitation", got)
		}
		for _, m := range got.Members {
			if want := map[string]string{f.owner.id: orgs.RoleOwner, f.member.id: orgs.RoleMember}[m.UserID]; m.Role != want {
				t.Errorf("member %s has role %s; want %s", m.Email, m.Role, want)
			}
		}
		r := e.Call("POST", p+"/leave", f.member.token, "")
		e.Expect(r, http.StatusOK, nil, "member leaves")
		if r := e.Call("GET", p, f.member.token, ""); r.Status != http.StatusNotFound {
			t.Errorf("GET organisation after leaving = %s; want 404", r)
		}
	})
}
