package orgs_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

var pathWildcard = regexp.MustCompile(`\{([^}]+)\}`)

// invalidInput is one request input the router must refuse with 422.
type invalidInput struct {
	name  string
	query string // raw query, without "?"
	body  string // "" sends no body
}

// invalidInputs returns the inputs of a route that its declaration refuses: a body of the
// wrong type, a missing body and malformed JSON when it reads a body, and for each query
// parameter a value its schema rejects (checked against the schema, so the case cannot
// silently turn valid).
func invalidInputs(t *testing.T, method, path string, params []schema.Param, hasBody, optionalBody bool) []invalidInput {
	t.Helper()
	var out []invalidInput
	if hasBody {
		out = append(out,
			invalidInput{name: "body of the wrong type", body: `[1]`},
			invalidInput{name: "malformed body", body: `{"`},
		)
		if !optionalBody {
			out = append(out, invalidInput{name: "no body"})
		}
	}
	for _, p := range params {
		if p.In != schema.InQuery {
			continue
		}
		const bad = "not-a-valid-value!"
		_, errs := schema.ParseParams([]schema.Param{p}, url.Values{p.Name: {bad}}, func(string) string { return "x" })
		if len(errs) == 0 {
			t.Logf("%s %s: query %s accepts any string; no invalid value to send", method, path, p.Name)
			continue
		}
		out = append(out, invalidInput{name: "invalid query " + p.Name, query: url.Values{p.Name: {bad}}.Encode()})
	}
	return out
}

// docs/api.md §4.3: "Organisation routes resolve the caller's membership first; a caller without
// one gets 404". On every organisation-scoped route the service serves, of every group (the list
// comes from the service, so a route added later is covered), a signed-in non-member sending an
// invalid body or query gets 404, not the router's 422, and so learns nothing about the route's
// input; a member sending the same gets 422; without a session it is still 401 first.
func TestMembershipIsResolvedBeforeValidation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnvGroups(t, tab, nil) // every group
		owner := e.signIn("owner@example.com")
		org := e.createOrg(owner, "Acme Fleet")
		member := e.join(owner, org.OrgID, "member@example.com", orgs.RoleMember)
		stranger := e.signIn("stranger@example.com")
		e.createOrg(stranger, "Stranger Fleet") // a member elsewhere, not in Acme

		var served []string
		var bodyCases, queryCases int
		for _, rt := range e.routes {
			if !orgs.IsOrgRoute(rt.Path) {
				continue
			}
			served = append(served, rt.OperationID)
			pathIn := func(orgID string) string {
				return pathWildcard.ReplaceAllStringFunc(rt.Path, func(w string) string {
					if w == "{org_id}" {
						return orgID
					}
					return "x"
				})
			}
			inputs := invalidInputs(t, rt.Method, rt.Path, rt.Params, rt.Body != nil, rt.OptionalBody)
			if len(inputs) == 0 {
				// Nothing to validate: the non-member is still refused.
				inputs = []invalidInput{{name: "valid input"}}
			}
			for _, in := range inputs {
				if in.body != "" || in.name == "no body" {
					bodyCases++
				}
				if in.query != "" {
					queryCases++
				}
				target := func(orgID string) string {
					if in.query == "" {
						return pathIn(orgID)
					}
					return pathIn(orgID) + "?" + in.query
				}
				scenarios := []apitest.Scenario{
					{Name: "without a session", WantStatus: http.StatusUnauthorized,
						Method: rt.Method, Path: target(org.OrgID), Body: in.body},
					{Name: "a member of another organisation", Token: stranger.token, WantStatus: http.StatusNotFound, WantDetail: orgs.DetailOrgNotFound,
						Method: rt.Method, Path: target(org.OrgID), Body: in.body},
					{Name: "anyone, in an organisation that does not exist", Token: member.token, WantStatus: http.StatusNotFound, WantDetail: orgs.DetailOrgNotFound,
						Method: rt.Method, Path: target("org_doesnotexist"), Body: in.body},
				}
				if in.name != "valid input" {
					scenarios = append(scenarios, apitest.Scenario{Name: "a member", Token: member.token, WantStatus: http.StatusUnprocessableEntity,
						Method: rt.Method, Path: target(org.OrgID), Body: in.body})
				}
				t.Run(rt.OperationID+"/"+in.name, func(t *testing.T) { e.Run(t, scenarios) })
			}
		}
		for _, op := range []string{"getOrg", "updateOrg", "listMembers", "inviteMember", "updateMember", "removeMember",
			"leaveOrg", "withdrawInvitation", "resendInvitation", "listAudit", "listKeys", "issueKey", "revokeKey",
			"getUsage", "getVitality", "getBilling", "startCheckout", "openBillingPortal"} {
			if !slices.Contains(served, op) {
				t.Errorf("%s is not among the organisation-scoped routes served: %v", op, served)
			}
		}
		if bodyCases == 0 || queryCases == 0 {
			t.Fatalf("%d body and %d query cases; want some of each", bodyCases, queryCases)
		}
		// Nothing the refused requests sent reached Acme: its name and members are unchanged.
		if r := e.Call("GET", "/console/orgs/"+org.OrgID, owner.token, ""); apitest.Decode[orgs.Organisation](t, r).Name != "Acme Fleet" {
			t.Errorf("organisation after the refused requests = %s; want it unchanged", r)
		}
		if got := len(e.members(owner, org.OrgID).Members); got != 2 {
			t.Errorf("%d members after the refused requests; want 2", got)
		}
	})
}
