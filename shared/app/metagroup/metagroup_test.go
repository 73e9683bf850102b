package metagroup_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/metagroup"
	"github.com/roadevents/roadevents/shared/app/openapidoc"
	"github.com/roadevents/roadevents/shared/routetable"
)

// The meta function reads no table and holds no secret: configured as on AWS (DynamoDB) but
// given none of the shared keys, it starts and answers; given a widest radius its generated
// document does not state, it refuses to start instead of serving a document that contradicts
// the events routes.
func TestLambda(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		radius  string
		wantErr error
	}{
		{"no keys, no table", "", nil},
		{"another widest radius", "5000", openapidoc.ErrConfiguration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{
				"ROADEVENTS_STORE": "dynamodb", "ROADEVENTS_TABLE": "roadevents-test", "ROADEVENTS_DATA": t.TempDir(),
				"ROADEVENTS_MAX_QUERY_RADIUS_M": tc.radius,
			}
			f, err := lambdaapp.New(context.Background(), routetable.GroupMeta, metagroup.Lambda(openapidoc.For),
				lambdaapp.Options{Getenv: func(k string) string { return vars[k] }, Logger: slog.New(slog.DiscardHandler)})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("New: %v; want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			rec := httptest.NewRecorder()
			f.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
			if rec.Code != http.StatusOK {
				t.Errorf("GET /health = %d; want 200", rec.Code)
			}
		})
	}
}
