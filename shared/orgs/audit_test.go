package orgs_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/schema"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §2.9, §4.3 and §10.3: the audit log is readable by any member, newest first, with
// limit honoured; actor_email is stored at write time and survives the actor's removal; the
// TOTP changes of an account are written in every organisation the user belongs to.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		a := e.createOrg(ada, "Ada Fleet")
		bob := e.join(ada, a.OrgID, "bob@example.com", orgs.RoleOwner)
		b := e.createOrg(bob, "Bob Fleet")
		e.Expect(e.Call("PATCH", "/console/orgs/"+a.OrgID, bob.token, `{"name":"Renamed by Bob"}`), http.StatusOK, nil, "bob renames a")

		secret := e.enableTOTP(bob)
		r := e.Call("POST", "/console/auth/totp/disable", bob.token, apitest.JSON(map[string]string{"code": e.totpCode(secret)}))
		e.Expect(r, http.StatusOK, nil, "bob disables TOTP")
		for _, org := range []string{a.OrgID, b.OrgID} {
			log := e.auditLogAs(t, bob, r, org)
			if len(log) < 2 || log[0].Action != "auth.totp_disabled" || log[1].Action != "auth.totp_enabled" {
				t.Errorf("audit of %s starts %+v; want auth.totp_disabled then auth.totp_enabled (docs/api.md §10.3)", org, log)
				continue
			}
			if log[0].ActorEmail == nil || *log[0].ActorEmail != "bob@example.com" {
				t.Errorf("TOTP entry actor_email = %v; want bob@example.com", log[0].ActorEmail)
			}
		}

		e.Expect(e.Call("DELETE", "/console/orgs/"+a.OrgID+"/members/"+bob.id, ada.token, ""), http.StatusOK, nil, "remove bob")
		log := e.auditLog(ada, a.OrgID)
		var rename *auditEntry
		for i := range log {
			if log[i].Action == orgs.ActionOrgUpdated {
				rename = &log[i]
			}
		}
		if rename == nil || rename.ActorEmail == nil || *rename.ActorEmail != "bob@example.com" || rename.ActorUserID == nil || *rename.ActorUserID != bob.id {
			t.Fatalf("org.updated after bob's removal = %+v; want bob's id and address kept (docs/api.md §2.9)", rename)
		}
		if log[0].Action != orgs.ActionMemberRemoved || log[0].Target == nil || *log[0].Target != bob.id {
			t.Errorf("newest entry = %+v; want member.removed of %s", log[0], bob.id)
		}

		r = e.Call("GET", "/console/orgs/"+a.OrgID+"/audit?limit=2", ada.token, "")
		e.Expect(r, http.StatusOK, nil, "audit with limit 2")
		two := apitest.Decode[[]auditEntry](t, r)
		if len(two) != 2 || two[0].AuditID != log[0].AuditID || two[1].AuditID != log[1].AuditID {
			t.Errorf("audit?limit=2 = %+v; want the two newest entries", two)
		}
		r = e.Call("GET", "/console/orgs/"+a.OrgID+"/audit", ada.token, "")
		if n := len(apitest.Decode[[]auditEntry](t, r)); n != len(log) || n > 50 {
			t.Errorf("audit without limit: %d entries; want all %d (default 50)", n, len(log))
		}
		member := e.join(ada, a.OrgID, "cat@example.com", orgs.RoleMember)
		r = e.Call("GET", "/console/orgs/"+a.OrgID+"/audit?limit=1", member.token, "")
		e.Expect(r, http.StatusOK, schema.Array(orgs.AuditEntryPublicSchema), "a member reads the audit log")
		if got := apitest.Decode[[]auditEntry](t, r); len(got) != 1 || got[0].Action != orgs.ActionInvitationAccepted {
			t.Errorf("member's audit?limit=1 = %+v; want the newest entry, invitation.accepted", got)
		}
	})
}

// auditLogAs reads the audit log with the session of the response r (a re-minted session).
func (e *env) auditLogAs(t *testing.T, u user, r apitest.Response, org string) []auditEntry {
	t.Helper()
	u.token = apitest.Decode[struct {
		Token string `json:"token"`
	}](t, r).Token
	return e.auditLog(u, org)
}

// docs/api.md §10.3 audit actions member.role_changed and member.left (actor, target, detail), the
// AuditEntryPublic shape of docs/api.md §2.9, and §8 "Audit limit: default 50": with more than 50
// entries the route without a limit answers exactly the 50 newest; limits outside 1..MaxLimit
// are a validation 422 on ["query","limit"].
func TestAuditRoleChangeLeaveAndDefaultLimit(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		bob := e.join(ada, o.OrgID, "bob@example.com", orgs.RoleMember)
		p := "/console/orgs/" + o.OrgID
		e.Expect(e.Call("PATCH", p+"/members/"+bob.id, ada.token, `{"role":"owner"}`), http.StatusOK, orgs.MemberPublicSchema, "promote bob")
		e.Expect(e.Call("POST", p+"/leave", bob.token, ""), http.StatusOK, consoleauth.OkResponseSchema, "bob leaves")

		r := e.Call("GET", p+"/audit", ada.token, "")
		e.Expect(r, http.StatusOK, schema.Array(orgs.AuditEntryPublicSchema), "audit log")
		log := apitest.Decode[[]auditEntry](t, r)
		if len(log) < 2 {
			t.Fatalf("audit log = %+v; want member.left and member.role_changed first", log)
		}
		left, changed := log[0], log[1]
		if left.Action != orgs.ActionMemberLeft || left.ActorUserID == nil || *left.ActorUserID != bob.id ||
			left.Target == nil || *left.Target != bob.id || left.ActorEmail == nil || *left.ActorEmail != bob.email {
			t.Errorf("newest entry = %+v; want member.left by and of bob (%s)", left, bob.id)
		}
		if changed.Action != orgs.ActionMemberRoleChanged || changed.ActorUserID == nil || *changed.ActorUserID != ada.id ||
			changed.Target == nil || *changed.Target != bob.id ||
			changed.Detail["from"] != orgs.RoleMember || changed.Detail["to"] != orgs.RoleOwner {
			t.Errorf("second entry = %+v; want member.role_changed by ada of bob, member to owner", changed)
		}

		// More than 50 entries: the default limit shows the 50 newest.
		l := audit.New(tab.Table, audit.Options{Clock: tab.Clock})
		for i := range 55 {
			if err := l.Record(t.Context(), o.OrgID, "test.filled", "", "", fmt.Sprint(i), nil); err != nil {
				t.Fatal(err)
			}
		}
		r = e.Call("GET", p+"/audit", ada.token, "")
		e.Expect(r, http.StatusOK, schema.Array(orgs.AuditEntryPublicSchema), "audit log without limit")
		got := apitest.Decode[[]auditEntry](t, r)
		if len(got) != audit.DefaultLimit || got[0].Target == nil || *got[0].Target != "54" || got[0].Detail == nil {
			t.Errorf("audit without limit: %d entries, newest %+v; want 50, newest target 54 with detail {}", len(got), got[0])
		}
		for _, q := range []string{"0", "-1", fmt.Sprint(audit.MaxLimit + 1), "ten"} {
			r := e.Call("GET", p+"/audit?limit="+q, ada.token, "")
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), `["query","limit"]`) {
				t.Errorf("audit?limit=%s = %s; want 422 at [\"query\",\"limit\"]", q, r)
			}
		}
	})
}
