package orgs_test

import (
	"net/http"
	"testing"

	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// spec 4.3 POST and GET /console/orgs: the creator is the owner, a new organisation is on the
// free plan (contract 3), and the record carries the caller's role.
func TestCreateAndGetOrganisation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		if o.Role != orgs.RoleOwner || o.Plan != orgs.FreePlan || o.Name != "Ada Fleet" || o.OrgID == "" {
			t.Fatalf("created organisation = %+v; want role owner, plan free, name Ada Fleet", o)
		}
		r := e.call("GET", "/console/orgs/"+o.OrgID, ada.token, "")
		e.expect(r, http.StatusOK, orgs.OrganisationSchema, "get organisation")
		if got := decode[orgs.Organisation](t, r); got != o {
			t.Errorf("GET organisation = %+v; want %+v", got, o)
		}
	})
}
