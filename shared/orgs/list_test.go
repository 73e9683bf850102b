package orgs_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// listOrgs reads GET /console/orgs as u; the body must be an array of Organisation.
func (e *env) listOrgs(u user) []orgs.Organisation {
	e.T.Helper()
	r := e.Call("GET", "/console/orgs", u.token, "")
	e.Expect(r, http.StatusOK, schema.Array(orgs.OrganisationSchema), "list organisations of "+u.email)
	return apitest.Decode[[]orgs.Organisation](e.T, r)
}

// sameOrgs fails unless got lists want's organisations, in want's order, with want's roles.
func (e *env) sameOrgs(what string, got, want []orgs.Organisation) {
	e.T.Helper()
	if len(got) != len(want) {
		e.T.Fatalf("%s: %d organisations %+v; want %d %+v", what, len(got), got, len(want), want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.OrgID != w.OrgID || g.Name != w.Name || g.Plan != w.Plan || !g.CreatedAt.Equal(w.CreatedAt) || g.Role != w.Role {
			e.T.Errorf("%s [%d] = %+v; want %+v", what, i, g, w)
		}
	}
}

func withRole(o orgs.Organisation, role string) orgs.Organisation {
	o.Role = role
	return o
}

// GET /console/orgs (beside the routes of docs/api.md §4.3, docs/console.md §1): the
// signed-in caller's organisations with the caller's role in each, ordered by name then org_id,
// and nobody else's. Leaving or being removed takes an organisation off the list at once; a
// role change shows in it.
func TestListOrganisations(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)

		if r := e.Call("GET", "/console/orgs", "", ""); r.Status != http.StatusUnauthorized {
			t.Fatalf("without a session = %s; want 401", r)
		}

		ann := e.signIn("ann@example.com")
		if r := e.Call("GET", "/console/orgs", ann.token, ""); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != "[]" {
			t.Fatalf("a user of no organisation = %s; want 200 []", r)
		}

		charlie := e.createOrg(ann, "Charlie")
		alpha1 := e.createOrg(ann, "Alpha")
		bravo := e.createOrg(ann, "Bravo")
		alpha2 := e.createOrg(ann, "Alpha")
		bob := e.signIn("bob@example.com")
		delta := e.createOrg(bob, "Delta")
		ann = e.joinSignedIn(bob, delta.OrgID, ann, orgs.RoleMember)
		echo := e.createOrg(bob, "Echo") // bob's alone: never on ann's list

		firstAlpha, secondAlpha := alpha1, alpha2
		if secondAlpha.OrgID < firstAlpha.OrgID {
			firstAlpha, secondAlpha = secondAlpha, firstAlpha
		}
		e.sameOrgs("ann's organisations", e.listOrgs(ann), []orgs.Organisation{
			firstAlpha, secondAlpha, bravo, charlie, withRole(delta, orgs.RoleMember),
		})
		e.sameOrgs("bob's organisations", e.listOrgs(bob), []orgs.Organisation{delta, echo})

		// A role change shows on the member's list.
		r := e.Call("PATCH", "/console/orgs/"+delta.OrgID+"/members/"+ann.id, bob.token, `{"role":"owner"}`)
		e.Expect(r, http.StatusOK, orgs.MemberPublicSchema, "make ann owner of Delta")
		if got := e.listOrgs(ann); len(got) != 5 || got[4].OrgID != delta.OrgID || got[4].Role != orgs.RoleOwner {
			t.Errorf("ann's organisations after the promotion = %+v; want Delta last, role owner", got)
		}

		// Leaving takes the organisation off the leaver's list only.
		r = e.Call("POST", "/console/orgs/"+delta.OrgID+"/leave", ann.token, "")
		e.Expect(r, http.StatusOK, nil, "ann leaves Delta")
		e.sameOrgs("ann's organisations after leaving Delta", e.listOrgs(ann), []orgs.Organisation{firstAlpha, secondAlpha, bravo, charlie})
		e.sameOrgs("bob's organisations after ann left", e.listOrgs(bob), []orgs.Organisation{delta, echo})

		// Removal takes it off the removed member's list.
		cy := e.join(bob, echo.OrgID, "cy@example.com", orgs.RoleMember)
		e.sameOrgs("cy's organisations", e.listOrgs(cy), []orgs.Organisation{withRole(echo, orgs.RoleMember)})
		r = e.Call("DELETE", "/console/orgs/"+echo.OrgID+"/members/"+cy.id, bob.token, "")
		e.Expect(r, http.StatusOK, nil, "bob removes cy from Echo")
		e.sameOrgs("cy's organisations after removal", e.listOrgs(cy), nil)

		// A rename shows on every member's list, and moves the organisation in the order.
		r = e.Call("PATCH", "/console/orgs/"+charlie.OrgID, ann.token, `{"name":"Aardvark"}`)
		e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "rename Charlie")
		charlie.Name = "Aardvark"
		e.sameOrgs("ann's organisations after the rename", e.listOrgs(ann), []orgs.Organisation{charlie, firstAlpha, secondAlpha, bravo})
	})
}

// joinSignedIn invites the already signed-in u to org as role and accepts as u.
func (e *env) joinSignedIn(owner user, org string, u user, role string) user {
	e.T.Helper()
	e.invite(owner, org, u.email, role)
	r := e.Call("POST", "/console/invitations/accept", u.token, apitest.JSON(map[string]string{"token": e.inbox.lastInviteToken(e.T, u.email)}))
	e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "accept the invitation of "+u.email)
	return u
}
