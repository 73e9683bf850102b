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

// orgRoutes is every /console/orgs/{org_id}/... route, with the resource ids given: the
// requests of scenarios that apitest.As completes.
func orgRoutes(org, userID, inviteID, keyID string) []apitest.Scenario {
	p := "/console/orgs/" + org
	return []apitest.Scenario{
		{Name: "read the organisation", Method: "GET", Path: p},
		{Name: "rename", Method: "PATCH", Path: p, Body: `{"name":"Renamed"}`},
		{Name: "list members", Method: "GET", Path: p + "/members"},
		{Name: "invite", Method: "POST", Path: p + "/members", Body: `{"email":"new@example.com"}`},
		{Name: "promote a member", Method: "PATCH", Path: p + "/members/" + userID, Body: `{"role":"owner"}`},
		{Name: "remove a member", Method: "DELETE", Path: p + "/members/" + userID},
		{Name: "leave", Method: "POST", Path: p + "/leave"},
		{Name: "withdraw an invitation", Method: "DELETE", Path: p + "/invitations/" + inviteID},
		{Name: "resend an invitation", Method: "POST", Path: p + "/invitations/" + inviteID + "/resend"},
		{Name: "read the audit log", Method: "GET", Path: p + "/audit"},
		{Name: "list keys", Method: "GET", Path: p + "/keys"},
		{Name: "issue a key", Method: "POST", Path: p + "/keys", Body: `{"label":"stolen","environment":"sandbox"}`},
		{Name: "revoke a key", Method: "DELETE", Path: p + "/keys/" + keyID},
	}
}

// docs/api.md §4.3 and §7: organisation routes resolve the caller's membership first, so a caller
// of another organisation gets 404 on every route of this one, whatever ids they name, and a
// resource id of another organisation is not found inside one's own (also 404). Nothing of the
// other organisation changes.
func TestOtherOrganisationIsNotFound(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		a, b := e.fixture("a"), e.fixture("b")
		var scenarios []apitest.Scenario
		for _, pair := range []struct {
			name   string
			caller user
			other  fixture
		}{
			{"a's owner in b:", a.owner, b},
			{"b's owner in a:", b.owner, a},
			{"a's member in b:", a.member, b},
			{"b's member in a:", b.member, a},
		} {
			// Every route of the other organisation, with its own ids.
			o := pair.other
			scenarios = append(scenarios, apitest.As(pair.name, pair.caller.token, http.StatusNotFound,
				orgRoutes(o.org.OrgID, o.member.id, o.invite.InviteID, o.keyID))...)
		}
		// An owner naming the other organisation's member, invitation and key inside their own.
		p := "/console/orgs/" + a.org.OrgID
		scenarios = append(scenarios, apitest.As("a's owner, in a, with b's id:", a.owner.token, http.StatusNotFound, []apitest.Scenario{
			{Name: "promote a member", Method: "PATCH", Path: p + "/members/" + b.member.id, Body: `{"role":"owner"}`},
			{Name: "remove a member", Method: "DELETE", Path: p + "/members/" + b.member.id},
			{Name: "withdraw an invitation", Method: "DELETE", Path: p + "/invitations/" + b.invite.InviteID},
			{Name: "resend an invitation", Method: "POST", Path: p + "/invitations/" + b.invite.InviteID + "/resend"},
			{Name: "revoke a key", Method: "DELETE", Path: p + "/keys/" + b.keyID},
		})...)
		// An unknown organisation is the same 404.
		scenarios = append(scenarios, apitest.Scenario{Name: "an unknown organisation", Token: a.owner.token,
			Method: "GET", Path: "/console/orgs/org_unknown", WantStatus: http.StatusNotFound})
		e.Run(t, scenarios)

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
	})
}

// docs/api.md §5 and §7: every console-orgs route needs a session: without one, or with an API key,
// 401 with WWW-Authenticate: Bearer, before anything else is looked at.
func TestRoutesNeedASession(t *testing.T) {
	t.Parallel()
	e := newEnv(t, tables.Embedded(t))
	f := e.fixture("a")
	r := e.issueKey(f.owner, f.org.OrgID, "sandbox", "not a session")
	apiKey := apitest.Decode[orgs.IssuedKey](t, r).Key
	routes := append(orgRoutes(f.org.OrgID, f.member.id, f.invite.InviteID, f.keyID),
		apitest.Scenario{Name: "create an organisation", Method: "POST", Path: "/console/orgs", Body: `{"name":"x"}`},
		apitest.Scenario{Name: "accept an invitation", Method: "POST", Path: "/console/invitations/accept", Body: `{"token":"x"}`})
	var scenarios []apitest.Scenario
	for _, c := range []struct{ who, token string }{
		{"no credential:", ""},
		{"an API key:", apiKey},
		{"an unknown session:", "ses_" + strings.Repeat("A", 43)},
	} {
		scenarios = append(scenarios, apitest.As(c.who, c.token, http.StatusUnauthorized, routes)...)
	}
	for i := range scenarios {
		scenarios[i].WantHeader = map[string]string{"WWW-Authenticate": "Bearer"}
	}
	e.Run(t, scenarios)
}

// docs/api.md §10.3 (Roles): a member asking for any owner act gets 403 and nothing changes; a
// member may read everything (organisation, members, keys, audit) and leave.
func TestMemberAskingOwnerActsIsForbidden(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		f := e.fixture("a")
		p := "/console/orgs/" + f.org.OrgID
		e.Run(t, append(apitest.As("member:", f.member.token, http.StatusForbidden, []apitest.Scenario{
			{Name: "rename", Method: "PATCH", Path: p, Body: `{"name":"Renamed"}`},
			{Name: "invite", Method: "POST", Path: p + "/members", Body: `{"email":"new@example.com"}`},
			{Name: "demote the owner", Method: "PATCH", Path: p + "/members/" + f.owner.id, Body: `{"role":"member"}`},
			{Name: "promote themself", Method: "PATCH", Path: p + "/members/" + f.member.id, Body: `{"role":"owner"}`},
			{Name: "remove the owner", Method: "DELETE", Path: p + "/members/" + f.owner.id},
			{Name: "withdraw an invitation", Method: "DELETE", Path: p + "/invitations/" + f.invite.InviteID},
			{Name: "resend an invitation", Method: "POST", Path: p + "/invitations/" + f.invite.InviteID + "/resend"},
			{Name: "issue a key", Method: "POST", Path: p + "/keys", Body: `{"label":"mine","environment":"sandbox"}`},
			{Name: "revoke a key", Method: "DELETE", Path: p + "/keys/" + f.keyID},
		}), apitest.As("member:", f.member.token, http.StatusOK, []apitest.Scenario{
			{Name: "read the organisation", Method: "GET", Path: p},
			{Name: "list members", Method: "GET", Path: p + "/members"},
			{Name: "list keys", Method: "GET", Path: p + "/keys"},
			{Name: "read the audit log", Method: "GET", Path: p + "/audit"},
		})...))
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
