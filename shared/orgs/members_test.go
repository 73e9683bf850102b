package orgs_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.3 and §10.3: the seat cap (Free: 3) counts members and live invitations
// together; past it an invitation is 409. Resend gives a new invite_id, retires the old one
// (its link stops working) and takes no extra seat; withdrawing frees a seat.
func TestSeatCapWithResend(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		bob := e.invite(ada, o.OrgID, "bob@example.com", orgs.RoleMember)
		oldToken := e.inbox.lastInviteToken(t, "bob@example.com")
		cat := e.invite(ada, o.OrgID, "cat@example.com", orgs.RoleOwner)
		full := e.Call("POST", "/console/orgs/"+o.OrgID+"/members", ada.token, `{"email":"dan@example.com"}`)
		e.ExpectDetail(full, http.StatusConflict, "a 4th seat on the free plan")

		r := e.Call("POST", "/console/orgs/"+o.OrgID+"/invitations/"+bob.InviteID+"/resend", ada.token, "")
		e.Expect(r, http.StatusOK, orgs.InvitePublicSchema, "resend bob's invitation")
		resent := apitest.Decode[orgs.Invitation](t, r)
		if resent.InviteID == bob.InviteID || resent.Email != "bob@example.com" || resent.Role != orgs.RoleMember {
			t.Errorf("resent invitation = %+v; want a new invite_id for bob@example.com as member (docs/api.md §3)", resent)
		}
		if n := len(e.inbox.To("bob@example.com")); n != 2 {
			t.Errorf("bob has %d e-mails; want 2: the invitation and the resent one", n)
		}
		list := e.members(ada, o.OrgID)
		ids := []string{}
		for _, inv := range list.Invitations {
			ids = append(ids, inv.InviteID)
		}
		if len(list.Members) != 1 || len(ids) != 2 || !contains(ids, resent.InviteID) || !contains(ids, cat.InviteID) || contains(ids, bob.InviteID) {
			t.Errorf("after resend: members %d, invitations %v; want 1 member and invitations %s, %s (the old one retired)",
				len(list.Members), ids, resent.InviteID, cat.InviteID)
		}
		e.ExpectDetail(e.Call("POST", "/console/orgs/"+o.OrgID+"/members", ada.token, `{"email":"dan@example.com"}`),
			http.StatusConflict, "a 4th seat after a resend (resend adds no seat)")
		// The retired invitation is gone for withdraw and resend too.
		if r := e.Call("DELETE", "/console/orgs/"+o.OrgID+"/invitations/"+bob.InviteID, ada.token, ""); r.Status != http.StatusNotFound {
			t.Errorf("withdraw the retired invitation = %s; want 404", r)
		}

		bobUser := e.signIn("bob@example.com")
		e.ExpectDetail(e.Call("POST", "/console/invitations/accept", bobUser.token, apitest.JSON(map[string]string{"token": oldToken})),
			http.StatusNotFound, "accept with the retired token")
		r = e.Call("POST", "/console/invitations/accept", bobUser.token, apitest.JSON(map[string]string{"token": e.inbox.lastInviteToken(t, "bob@example.com")}))
		e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "accept with the new token")
		if got := apitest.Decode[orgs.Organisation](t, r); got.OrgID != o.OrgID || got.Role != orgs.RoleMember {
			t.Errorf("accept = %+v; want organisation %s with role member", got, o.OrgID)
		}
		// Accepting turns an invitation into a member: still 3 seats.
		e.ExpectDetail(e.Call("POST", "/console/orgs/"+o.OrgID+"/members", ada.token, `{"email":"dan@example.com"}`),
			http.StatusConflict, "a 4th seat after an acceptance")
		r = e.Call("DELETE", "/console/orgs/"+o.OrgID+"/invitations/"+cat.InviteID, ada.token, "")
		e.Expect(r, http.StatusOK, nil, "withdraw cat's invitation")
		e.invite(ada, o.OrgID, "dan@example.com", orgs.RoleMember)
		// The withdrawn invitation's link no longer works.
		catUser := e.signIn("cat@example.com")
		e.ExpectDetail(e.Call("POST", "/console/invitations/accept", catUser.token, apitest.JSON(map[string]string{"token": e.inbox.lastInviteToken(t, "cat@example.com")})),
			http.StatusNotFound, "accept a withdrawn invitation")

		actions := []string{}
		for _, a := range e.auditLog(ada, o.OrgID) {
			actions = append(actions, a.Action)
		}
		want := []string{"member.invited", "invitation.withdrawn", "invitation.accepted", "invitation.resent", "member.invited", "member.invited", "org.created"}
		if strings.Join(actions, " ") != strings.Join(want, " ") {
			t.Errorf("audit actions = %v; want %v (newest first, docs/api.md §10.3)", actions, want)
		}
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// docs/api.md §4.3: the seat cap holds under concurrent invitations: with two seats left, six
// invitations at once give exactly two 201 and four 409.
func TestSeatCapHoldsUnderConcurrentInvitations(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		const n = 6
		statuses := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := e.Call("POST", "/console/orgs/"+o.OrgID+"/members", ada.token, fmt.Sprintf(`{"email":"p%d@example.com"}`, i))
				statuses[i] = r.Status
			})
		}
		wg.Wait()
		count := map[int]int{}
		for _, s := range statuses {
			count[s]++
		}
		if count[http.StatusCreated] != 2 || count[http.StatusConflict] != n-2 {
			t.Errorf("concurrent invitations: statuses %v; want exactly 2 201 and %d 409", statuses, n-2)
		}
		if got := e.members(ada, o.OrgID); len(got.Members)+len(got.Invitations) != 3 {
			t.Errorf("seats taken = %d members + %d invitations; want 3", len(got.Members), len(got.Invitations))
		}
	})
}

// docs/api.md §10.3: invitations are capped at 3 per recipient address per day (a resend is an
// invitation e-mail too) and 20 per actor per hour; past a cap 429 with Retry-After.
func TestInvitationCaps(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnvCaps(t, tab, seatsUncapped)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		inv := e.invite(ada, o.OrgID, "bob@example.com", orgs.RoleMember)
		for range 2 {
			r := e.Call("POST", "/console/orgs/"+o.OrgID+"/invitations/"+inv.InviteID+"/resend", ada.token, "")
			e.Expect(r, http.StatusOK, orgs.InvitePublicSchema, "resend")
			inv = apitest.Decode[orgs.Invitation](t, r)
		}
		r := e.Call("POST", "/console/orgs/"+o.OrgID+"/invitations/"+inv.InviteID+"/resend", ada.token, "")
		e.ExpectDetail(r, http.StatusTooManyRequests, "4th invitation e-mail to one address in a day")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
		if n := len(e.inbox.To("bob@example.com")); n != 3 {
			t.Errorf("bob got %d e-mails; want 3", n)
		}
		// 3 counted for ada so far: the resend the recipient's cap refused spent nothing of
		// hers; 17 more addresses fill her hour.
		for i := range 17 {
			e.invite(ada, o.OrgID, fmt.Sprintf("p%d@example.com", i), orgs.RoleMember)
		}
		r = e.Call("POST", "/console/orgs/"+o.OrgID+"/members", ada.token, `{"email":"late@example.com"}`)
		e.ExpectDetail(r, http.StatusTooManyRequests, "21st invitation by one actor in an hour")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("429 without Retry-After")
		}
		e.clock.Advance(time.Hour)
		e.invite(ada, o.OrgID, "late@example.com", orgs.RoleMember)
	})
}

// docs/api.md §3, §4.3 and §10.3: an invitation is accepted by a signed-in user whose address
// matches (403 otherwise); an unknown, used or expired token is 404; the e-mail links to
// <ConsoleURL>accept-invite#token=<token>; the token is in no response body.
func TestAcceptInvitation(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		e.invite(ada, o.OrgID, "Bob@Example.com", orgs.RoleOwner)
		msgs := e.inbox.To("bob@example.com")
		if len(msgs) != 1 || !strings.Contains(msgs[0].Text, consoleURL+"accept-invite#token=") {
			t.Fatalf("invitation e-mails to bob = %+v; want one linking to %saccept-invite#token=", msgs, consoleURL)
		}
		token := e.inbox.lastInviteToken(t, "bob@example.com")
		if strings.Contains(msgs[0].Subject, token) {
			t.Errorf("the subject holds the token: %q", msgs[0].Subject)
		}
		accept := func(u user, token string) apitest.Response {
			return e.Call("POST", "/console/invitations/accept", u.token, apitest.JSON(map[string]string{"token": token}))
		}
		mallory := e.signIn("mallory@example.com")
		e.Run(t, []apitest.Scenario{
			{Name: "accept by another address", Token: mallory.token, WantStatus: http.StatusForbidden,
				Method: "POST", Path: "/console/invitations/accept", Body: apitest.JSON(map[string]string{"token": token})},
			{Name: "accept an unknown token", Token: mallory.token, WantStatus: http.StatusNotFound,
				Method: "POST", Path: "/console/invitations/accept", Body: `{"token":"ivt_unknown"}`},
			{Name: "accept without a session", WantStatus: http.StatusUnauthorized,
				Method: "POST", Path: "/console/invitations/accept", Body: apitest.JSON(map[string]string{"token": token})},
		})

		bob := e.signIn("bob@example.com")
		r := accept(bob, token)
		e.Expect(r, http.StatusOK, orgs.OrganisationSchema, "accept by bob (address compared without case)")
		if got := apitest.Decode[orgs.Organisation](t, r); got.Role != orgs.RoleOwner || got.OrgID != o.OrgID {
			t.Errorf("accept = %+v; want role owner in %s", got, o.OrgID)
		}
		e.ExpectDetail(accept(bob, token), http.StatusNotFound, "accept a used token")

		// Expiry: 7 days (docs/api.md §10.3), on the injected clock.
		e.invite(ada, o.OrgID, "cat@example.com", orgs.RoleMember)
		catToken := e.inbox.lastInviteToken(t, "cat@example.com")
		e.clock.Advance(orgs.InvitationTTL + time.Second)
		cat := e.signIn("cat@example.com")
		e.ExpectDetail(accept(cat, catToken), http.StatusNotFound, "accept an expired token")
		if got := e.members(ada, o.OrgID); len(got.Invitations) != 0 || len(got.Members) != 2 {
			t.Errorf("after expiry: %d members, invitations %+v; want 2 members and no pending invitation", len(got.Members), got.Invitations)
		}

		// An existing member cannot take a second seat through an invitation.
		e.ExpectDetail(e.Call("POST", "/console/orgs/"+o.OrgID+"/members", ada.token, `{"email":"bob@example.com"}`),
			http.StatusConflict, "invite a member")
		e.invite(ada, o.OrgID, "dan@example.com", orgs.RoleMember)
		e.ExpectDetail(e.Call("POST", "/console/orgs/"+o.OrgID+"/members", ada.token, `{"email":"dan@example.com"}`),
			http.StatusConflict, "invite an address with a pending invitation")

		e.auditLog(ada, o.OrgID) // the audit log's detail is among the bodies checked (docs/api.md §10.3)
		for _, m := range e.inbox.All() {
			if tok := inviteLink.FindStringSubmatch(m.Text); tok != nil {
				for _, body := range e.seen.list() {
					if strings.Contains(body, tok[1]) || strings.Contains(body, tok[1][4:]) {
						t.Errorf("the invitation token of %s appears in a response body: %s", m.To, body)
					}
				}
			}
		}
	})
}

// docs/api.md §4.3 and §10.3: the last owner can be neither demoted, removed nor leave (409);
// with two owners, each demoting the other at once, exactly one succeeds.
func TestLastOwnerStays(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		p := "/console/orgs/" + o.OrgID
		e.Run(t, apitest.As("the last owner:", ada.token, http.StatusConflict, []apitest.Scenario{
			{Name: "demote themself", Method: "PATCH", Path: p + "/members/" + ada.id, Body: `{"role":"member"}`},
			{Name: "remove themself", Method: "DELETE", Path: p + "/members/" + ada.id},
			{Name: "leave", Method: "POST", Path: p + "/leave"},
		}))

		bob := e.join(ada, o.OrgID, "bob@example.com", orgs.RoleOwner)
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i, pair := range [][2]user{{ada, bob}, {bob, ada}} {
			wg.Go(func() {
				statuses[i] = e.Call("PATCH", p+"/members/"+pair[1].id, pair[0].token, `{"role":"member"}`).Status
			})
		}
		wg.Wait()
		if !(statuses[0] == 200 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 200 ||
			// the demoted one may be refused as a member (403) if its demotion landed first
			statuses[0] == 200 && statuses[1] == 403 || statuses[0] == 403 && statuses[1] == 200) {
			t.Fatalf("owners demoting each other at once: statuses %v; want one 200 and one 409 or 403", statuses)
		}
		owners := 0
		for _, m := range e.members(ada, o.OrgID).Members {
			if m.Role == orgs.RoleOwner {
				owners++
			}
		}
		if owners != 1 {
			t.Fatalf("%d owners after the race; want 1", owners)
		}
	})
}

// docs/api.md §4.3: role change, removal and leave; removing a member does not revoke the
// organisation's keys (keys belong to the organisation); the member list shows the role.
func TestRoleChangeRemovalAndLeave(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnv(t, tab)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		p := "/console/orgs/" + o.OrgID
		bob := e.join(ada, o.OrgID, "bob@example.com", orgs.RoleMember)
		r := e.Call("PATCH", p+"/members/"+bob.id, ada.token, `{"role":"owner"}`)
		e.Expect(r, http.StatusOK, orgs.MemberPublicSchema, "promote bob")
		if got := apitest.Decode[orgs.Member](t, r); got.Role != orgs.RoleOwner || got.UserID != bob.id || got.Email != "bob@example.com" {
			t.Errorf("promoted member = %+v; want bob as owner", got)
		}
		// Bob, now an owner, issues a key; then ada removes him.
		r = e.issueKey(bob, o.OrgID, "sandbox", "bob's key")
		e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "bob issues a key")
		key := apitest.Decode[orgs.IssuedKey](t, r)
		if key.APIKey.CreatedByEmail == nil || *key.APIKey.CreatedByEmail != "bob@example.com" {
			t.Errorf("created_by_email = %v; want bob@example.com", key.APIKey.CreatedByEmail)
		}
		e.Expect(e.Call("DELETE", p+"/members/"+bob.id, ada.token, ""), http.StatusOK, nil, "remove bob")
		if r := e.Call("GET", p, bob.token, ""); r.Status != http.StatusNotFound {
			t.Errorf("bob reads the organisation after removal = %s; want 404", r)
		}
		if r := e.Call("DELETE", p+"/members/"+bob.id, ada.token, ""); r.Status != http.StatusNotFound {
			t.Errorf("remove bob twice = %s; want 404", r)
		}
		if r := e.Call("GET", "/v1/events?lat=48.85&lon=2.35", key.Key, ""); r.Status != http.StatusOK {
			t.Errorf("bob's key after his removal: GET /v1/events = %s; want 200 (docs/api.md §4.3: keys stay)", r)
		}
		// Cat joins and leaves.
		cat := e.join(ada, o.OrgID, "cat@example.com", orgs.RoleMember)
		e.Expect(e.Call("POST", p+"/leave", cat.token, ""), http.StatusOK, nil, "cat leaves")
		if got := e.members(ada, o.OrgID); len(got.Members) != 1 || got.Members[0].UserID != ada.id {
			t.Errorf("members = %+v; want ada alone", got.Members)
		}
		actions := []string{}
		for _, a := range e.auditLog(ada, o.OrgID)[:4] {
			actions = append(actions, a.Action)
		}
		if want := "member.left invitation.accepted member.invited member.removed"; strings.Join(actions, " ") != want {
			t.Errorf("latest audit actions = %v; want %s", actions, want)
		}
	})
}

// docs/api.md §4.3 GET .../members: each member shows the display name of their profile (null when
// unset), read for all members at once.
func TestMembersShowDisplayNames(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnvCaps(t, tab, seatsUncapped)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		name := func(u user, n string) {
			r := e.Call("PATCH", "/console/auth/me", u.token, apitest.JSON(map[string]string{"display_name": n}))
			e.Expect(r, http.StatusOK, nil, "set the display name of "+u.email)
		}
		name(ada, "Ada L.")
		want := map[string]string{"ada@example.com": "Ada L."}
		for i := range 4 {
			addr := fmt.Sprintf("m%d@example.com", i)
			u := e.join(ada, o.OrgID, addr, orgs.RoleMember)
			if i%2 == 0 {
				name(u, fmt.Sprintf("Member %d", i))
				want[addr] = fmt.Sprintf("Member %d", i)
			}
		}
		list := e.members(ada, o.OrgID)
		if len(list.Members) != 5 {
			t.Fatalf("%d members; want 5", len(list.Members))
		}
		for _, m := range list.Members {
			got := "<null>"
			if m.DisplayName != nil {
				got = *m.DisplayName
			}
			w, ok := want[m.Email]
			if !ok {
				w = "<null>"
			}
			if got != w {
				t.Errorf("member %s display_name = %q; want %q", m.Email, got, w)
			}
		}
	})
}

// docs/network.md §2: a verdict's notice goes to the owners of the organisation, and to no one
// else: not a member, not an invited owner who has not accepted.
func TestOwnersListsTheOwners(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		e := newEnvCaps(t, tab, seatsUncapped)
		ada := e.signIn("ada@example.com")
		o := e.createOrg(ada, "Ada Fleet")
		e.join(ada, o.OrgID, "bob@example.com", orgs.RoleOwner)
		e.join(ada, o.OrgID, "cat@example.com", orgs.RoleMember)
		e.invite(ada, o.OrgID, "dan@example.com", orgs.RoleOwner)
		svc, err := orgs.New(tab, orgs.Options{Clock: tab.Clock, Mailer: consoletest.DiscardMail{}, Keys: e.keys,
			Users: consoletest.Accounts{}, TOTP: consoletest.NoTOTP{}})
		if err != nil {
			t.Fatal(err)
		}
		org, owners, err := svc.Owners(context.Background(), o.OrgID)
		slices.Sort(owners)
		if err != nil || org.Name != "Ada Fleet" || !slices.Equal(owners, []string{"ada@example.com", "bob@example.com"}) {
			t.Errorf("Owners = %+v, %v, %v; want Ada Fleet, [ada bob], nil", org, owners, err)
		}
		if _, _, err := svc.Owners(context.Background(), "org_unknown"); !errors.Is(err, orgs.ErrNotFound) {
			t.Errorf("Owners(unknown) = %v; want ErrNotFound", err)
		}
	})
}
