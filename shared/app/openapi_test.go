package app_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi/openapitest"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// newAPI builds an API serving groups (every group when none are named) on a fresh
// embedded table.
func newAPI(t *testing.T, groups ...routetable.Group) *app.API {
	t.Helper()
	tab := tables.Embedded(t)
	api, err := app.New(app.Deps{
		Config: config.Default(), Build: "test", Table: tab.Table, Clock: tab.Clock,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Keys:   apikey.New(tab.Table, apikey.Options{Clock: tab.Clock}),
		Meter:  metering.New(tab.Table, metering.Options{Clock: tab.Clock, FlushInterval: -1}),
	}, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return api
}

type document struct {
	OpenAPI string `json:"openapi"`
	Info    struct {
		Version string `json:"version"`
	} `json:"info"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// docs/api.md §10.1: /openapi.json is OpenAPI 3.1, info.version 1.0.0, and valid
// against the official OAS 3.1 schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc := newAPI(t).OpenAPI()
	if _, err := openapitest.Validate(doc); err != nil {
		t.Fatal(err)
	}
	var d document
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	if d.OpenAPI != "3.1.0" || d.Info.Version != "1.0.0" {
		t.Errorf("openapi %q, info.version %q; want 3.1.0 and 1.0.0 (docs/api.md §10.1)", d.OpenAPI, d.Info.Version)
	}
	// docs/api.md §10.1 names these schemas; the ones of groups not built yet join as they land.
	for _, name := range []string{"HTTPValidationError", "ValidationError", "TaxonomyOut", "TypeSpec", "LimitsOut",
		// docs/api.md §10.3, the console-auth group
		"RequestCodePayload", "VerifyCodePayload", "TotpCodePayload", "RecoveryCodePayload", "Session",
		"TotpEnrolment", "RecoveryCodes", "RecoveryCodesStatus", "OkResponse", "ProfileUpdate", "AuthChallenge", "MePublic",
		// the stream ticket (POST /v1/stream/tickets)
		"StreamTicketOut",
		// docs/api.md §2.9 and §10.3: usage, vitality and billing
		"UsageTotals", "UsageDay", "UsageSeries", "Vitality", "PlanPublic", "BillingSummary",
		"CheckoutPayload", "BillingSessionPublic",
		// docs/api.md §10.3: organisations, members, invitations, keys and audit
		"Organisation", "OrganisationUpdate", "CreateOrgPayload", "MemberPublic", "MembersList", "MemberUpdate",
		"InvitePayload", "InvitePublic", "AcceptInvitePayload", "CreateKeyPayload", "ApiKeyPublic", "IssuedKey",
		"AuditEntryPublic"} {
		if d.Components.Schemas[name] == nil {
			t.Errorf("components.schemas lacks %s (docs/api.md §10.1)", name)
		}
	}
}

var wildcard = regexp.MustCompile(`\{[^}]+\}`)

// docs/api.md §10.1 (every route described): the document and the router agree both ways: every
// route served is documented, and every documented operation is served (a request reaches a handler
// rather than the router's JSON 404/405).
func TestOpenAPIDocumentMatchesRoutes(t *testing.T) {
	t.Parallel()
	api := newAPI(t)
	var d document
	if err := json.Unmarshal(api.OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, ops := range d.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, rt := range api.Routes() {
		if rt.Hidden {
			continue
		}
		path := strings.TrimSuffix(rt.Path, "{$}") // "/{$}" is documented as "/"
		if path == "" {
			path = "/"
		}
		served[rt.Method+" "+path] = true
	}
	for op := range served {
		if !documented[op] {
			t.Errorf("%s is served but not documented", op)
		}
	}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	var ops []string
	for op := range documented {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		if !served[op] {
			t.Errorf("%s is documented but not among the routes", op)
		}
		method, path, _ := strings.Cut(op, " ")
		url := srv.URL + wildcard.ReplaceAllString(path, "x")
		req, _ := http.NewRequest(method, url, strings.NewReader("{}"))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		unmatched := resp.StatusCode == http.StatusMethodNotAllowed ||
			(resp.StatusCode == http.StatusNotFound && strings.Contains(string(body), `"Not Found"`))
		if unmatched {
			t.Errorf("%s is documented but the router answers %d %s", op, resp.StatusCode, body)
		}
	}
	if len(ops) < 6 {
		t.Fatalf("only %d operations documented; want at least the 6 open routes", len(ops))
	}
}

// docs/operations.md §1: every operation that reads or writes the table documents the 503 with
// Retry-After that answers a table out of reach; the ones that never read it do not.
func TestOpenAPIDeclaresUnavailable(t *testing.T) {
	t.Parallel()
	var d struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(newAPI(t).OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	tableFree := regexp.MustCompile(`^(/|/health|/openapi\.json|/v1/meta/.*|/console/plans)$`)
	for path, ops := range d.Paths {
		for method, op := range ops {
			r, declared := op.Responses["503"]
			switch {
			case tableFree.MatchString(path) && declared:
				t.Errorf("%s %s, which never reads the table, declares 503", method, path)
			case !tableFree.MatchString(path) && (!declared || r.Headers["Retry-After"] == nil):
				t.Errorf("%s %s declares no 503 with Retry-After (docs/operations.md §1)", method, path)
			}
		}
	}
}

// docs/api.md §10.1 (/openapi.json): every operation has a description, and every tag an
// operation uses is listed among the document's tags with a description, since the linters of
// scripts/test.sh only warn about either.
func TestOpenAPIOperationsAndTagsAreDescribed(t *testing.T) {
	t.Parallel()
	var d struct {
		Tags []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
		Paths map[string]map[string]struct {
			Description string   `json:"description"`
			Tags        []string `json:"tags"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(newAPI(t).OpenAPI(), &d); err != nil {
		t.Fatal(err)
	}
	described := map[string]bool{}
	for _, tag := range d.Tags {
		described[tag.Name] = tag.Description != ""
	}
	for path, ops := range d.Paths {
		for method, op := range ops {
			if op.Description == "" {
				t.Errorf("%s %s has no description", strings.ToUpper(method), path)
			}
			for _, tag := range op.Tags {
				if !described[tag] {
					t.Errorf("%s %s: tag %q is not described among the document's tags", strings.ToUpper(method), path, tag)
				}
			}
		}
	}
}
