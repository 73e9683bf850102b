package openapitest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/app/apptest"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/httpapi/openapitest"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// The check every test's answers go through (apptest.New): answers that grow stay valid
// (docs/api.md §9 rule 2: a new field breaks no validating client), and an answer the
// document does not allow is reported: a wrong type, an undocumented status, a stream
// answered with a status it does not document.
func TestAnswersAreCheckedAgainstTheDocument(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	api := apptest.New(t, app.Deps{Config: config.Default(), Table: tab.Table, Clock: tab.Clock}, routetable.GroupMeta)
	answers, err := openapitest.AnswersOf(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	// The taxonomy as served, with a member added at the top and in each nested type.
	real := httptest.NewRecorder()
	api.Handler().ServeHTTP(real, httptest.NewRequest(http.MethodGet, "/v1/meta/taxonomy", nil))
	var taxonomy map[string]any
	if err := json.Unmarshal(real.Body.Bytes(), &taxonomy); err != nil {
		t.Fatal(err)
	}
	taxonomy["new_top"] = 1
	for _, typ := range taxonomy["types"].([]any) {
		typ.(map[string]any)["new_in_type"] = true
	}
	grown, _ := json.Marshal(taxonomy)
	cases := []struct {
		name, path  string
		status      int
		contentType string
		body        string
		wantReport  string // "" for none
	}{
		{"documented answer", "/health", 200, "application/json", `{"status":"ok","version":"test"}`, ""},
		{"one more field", "/health", 200, "application/json", `{"status":"ok","version":"test","uptime_s":12}`, ""},
		{"more fields in nested objects", "/v1/meta/taxonomy", 200, "application/json", string(grown), ""},
		{"wrong type", "/health", 200, "application/json", `{"status":5,"version":"test"}`, "doesn't match"},
		{"undocumented status", "/health", http.StatusTeapot, "application/json", `{"detail":"tea"}`, "status is not supported"},
		{"undocumented path", "/no-such-route", 404, "application/json", `{"detail":"Not Found"}`, ""},
		{"stream with an undocumented status", "/v1/stream?lat=1&lon=2", http.StatusTeapot, "text/event-stream", "", "status is not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var reports []string
			h := answers.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}), func(err error) { reports = append(reports, err.Error()) })
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
			if rec.Code != tc.status || rec.Body.String() != tc.body {
				t.Errorf("the client got %d %q; want the answer unchanged, %d %q", rec.Code, rec.Body, tc.status, tc.body)
			}
			switch {
			case tc.wantReport == "" && len(reports) > 0:
				t.Errorf("reported %q; want no report", reports)
			case tc.wantReport != "" && (len(reports) != 1 || !strings.Contains(reports[0], tc.wantReport)):
				t.Errorf("reported %q; want one report saying %q", reports, tc.wantReport)
			}
		})
	}
}
