package consoleusage_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/apitest"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/consoletest"
	"github.com/roadevents/roadevents/shared/consoleusage"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// With the real organisations: the creator of an organisation reads its usage and vitality,
// a signed-in stranger gets 404 for both (docs/api.md §4.3), as does anyone for an unknown id.
func TestUsageWithRealOrganisations(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	keys := apikey.New(tab, apikey.Options{Clock: tab.Clock})
	og, err := orgs.New(tab, orgs.Options{Clock: tab.Clock, Mailer: consoletest.DiscardMail{}, Keys: keys, Users: consoletest.Accounts{}, TOTP: consoletest.NoTOTP{}})
	if err != nil {
		t.Fatal(err)
	}
	org, err := og.CreateOrg(context.Background(), orgs.Actor{UserID: "usr_owner"}, "Fleet")
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(httpapi.Config{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Middleware: []httpapi.RouteMiddleware{consoleauth.Middleware(consoletest.Sessions{
			tokenOwner:    {User: consoleauth.User{ID: "usr_owner"}},
			tokenOutsider: {User: consoleauth.User{ID: "usr_outsider"}},
		})},
	})
	api.Handle(consoleusage.Routes(consoleusage.Deps{
		Orgs: og, Keys: keys, Clock: tab.Clock,
		Meter: metering.New(tab, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
	})...)
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	p := "/console/orgs/" + org.OrgID
	apitest.Client{T: t, URL: srv.URL}.Run(t, []apitest.Scenario{
		{Name: "owner reads usage", Token: tokenOwner, Method: "GET", Path: p + "/usage", WantStatus: http.StatusOK},
		{Name: "owner reads vitality", Token: tokenOwner, Method: "GET", Path: p + "/vitality", WantStatus: http.StatusOK},
		{Name: "stranger reads usage", Token: tokenOutsider, Method: "GET", Path: p + "/usage", WantStatus: http.StatusNotFound},
		{Name: "stranger reads vitality", Token: tokenOutsider, Method: "GET", Path: p + "/vitality", WantStatus: http.StatusNotFound},
		{Name: "unknown organisation", Token: tokenOwner, Method: "GET", Path: "/console/orgs/org_unknown/usage", WantStatus: http.StatusNotFound},
	})
}
