package orgs_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §10.3: "Tokens, keys, tickets, codes and invitation tokens are stored only as SHA-256
// hashes", and the audit detail "never holds a secret"; docs/api.md §5 API key rule 1: only a key's hash is
// stored. Every item the console writes (read off the table's change feed, so that no item
// can be missed), every log line, every e-mail subject and every audit entry is free of every
// raw invitation token, API key and session token the service handed out. The embedded
// adapter's feed only: the items are the same on both, and DynamoDB Local's stream is slow.
func TestSecretsAreNeverStoredLoggedOrAudited(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	ctx := t.Context()
	cur, err := tab.Feed.Follow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	e := newEnvGroups(t, tab, func(string) (int, int) { return 0, 0 }) // every group, uncapped

	f := e.fixture("s")
	secrets := map[string]string{"owner session": f.owner.token, "member session": f.member.token}
	r := e.Call("POST", "/console/orgs/"+f.org.OrgID+"/invitations/"+f.invite.InviteID+"/resend", f.owner.token, "")
	e.Expect(r, http.StatusOK, orgs.InvitePublicSchema, "resend")
	newcomer := e.join(f.owner, f.org.OrgID, "s-newcomer@example.com", orgs.RoleOwner)
	secrets["newcomer session"] = newcomer.token
	for i, env := range []string{"live", "sandbox"} {
		r := e.issueKey(newcomer, f.org.OrgID, env, "k")
		e.Expect(r, http.StatusCreated, orgs.IssuedKeySchema, "issue a key")
		secrets[fmt.Sprintf("key %d", i)] = apitest.Decode[orgs.IssuedKey](t, r).Key
	}
	// An accept with a wrong token is logged as a refusal, never with the token.
	wrong := "ivt_" + strings.Repeat("Z", 43)
	secrets["refused token"] = wrong
	e.ExpectDetail(e.Call("POST", "/console/invitations/accept", f.member.token, apitest.JSON(map[string]string{"token": wrong})),
		http.StatusNotFound, "accept an unknown token")
	n := 0
	for _, m := range e.inbox.All() {
		if tok := inviteLink.FindStringSubmatch(m.Text); tok != nil {
			secrets[fmt.Sprintf("invitation token %d", n)] = tok[1]
			n++
		}
	}
	if n < 4 {
		t.Fatalf("%d invitation links sent; want at least 4 (member, invitee, resend, newcomer)", n)
	}
	// Every secret but the session tokens must have been handed out: the checks below would
	// otherwise pass on nothing.
	for what, s := range secrets {
		if len(s) < 20 {
			t.Fatalf("%s = %q; want a secret", what, s)
		}
	}

	// Drain the feed up to a marker written last.
	marker := store.Item{store.AttrPK: "test#marker", store.AttrSK: "end"}
	if err := tab.Put(ctx, marker, store.Condition{}); err != nil {
		t.Fatal(err)
	}
	var items []store.Item
	for {
		c, err := cur.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.Key == marker.Key() {
			break
		}
		if c.New != nil {
			items = append(items, c.New)
		}
	}
	if len(items) < 10 {
		t.Fatalf("%d items written; want the organisation's many", len(items))
	}

	var subjects []string
	for _, m := range e.inbox.All() {
		subjects = append(subjects, m.Subject)
	}
	audit := e.Call("GET", "/console/orgs/"+f.org.OrgID+"/audit?limit=200", f.owner.token, "")
	e.Expect(audit, http.StatusOK, nil, "audit log")
	places := map[string]string{
		"the log":            e.logs.String(),
		"an e-mail subject":  strings.Join(subjects, "\n"),
		"the audit log":      string(audit.Body),
		"the members list":   string(e.Call("GET", "/console/orgs/"+f.org.OrgID+"/members", f.owner.token, "").Body),
		"the keys list":      string(e.Call("GET", "/console/orgs/"+f.org.OrgID+"/keys", f.owner.token, "").Body),
		"the organisation's": string(e.Call("GET", "/console/orgs/"+f.org.OrgID, f.owner.token, "").Body),
	}
	for _, it := range items {
		places["item "+it.Key().PK+" "+it.Key().SK] = fmt.Sprint(map[string]any(it))
	}
	for what, s := range secrets {
		// The part after the prefix too: a store of the bare random part is a store all the same.
		for _, needle := range []string{s, s[strings.Index(s, "_")+1:]} {
			for where, text := range places {
				if strings.Contains(text, needle) {
					t.Errorf("%s (%.12s...) appears in %s", what, needle, where)
				}
			}
		}
	}
}
