package billinggroup_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/roadevents/roadevents/shared/app/billinggroup"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/app/lambdaapp"
	"github.com/roadevents/roadevents/shared/app/lambdastore"
	"github.com/roadevents/roadevents/shared/app/tenants"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/store"
)

// env is a fake environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// scheduledPayload is an EventBridge scheduled event as a schedule rule sends it.
const scheduledPayload = `{"version":"0","id":"53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa","detail-type":"Scheduled Event",
"source":"aws.events","account":"123456789012","time":"2040-04-01T00:10:00Z","region":"eu-west-1",
"resources":["arn:aws:events:eu-west-1:123456789012:rule/overage"],"detail":{}}`

// fakeStripe answers the usage-record calls and records them.
type fakeStripe struct {
	mu    sync.Mutex
	calls []url.Values
	paths []string
}

func (f *fakeStripe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	f.mu.Lock()
	f.calls = append(f.calls, form)
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"id":"mbur_1","object":"usage_record","quantity":1}`)
}

// docs/console.md §3 on AWS: the billing function serves an HTTP API event as a request, and an
// EventBridge scheduled event runs the overage job, which reports the reads beyond a subscribed
// organisation's included ones on its metered item.
func TestFunctionRunsTheOverageJob(t *testing.T) {
	t.Parallel()
	stripe := &fakeStripe{}
	srv := httptest.NewServer(stripe)
	t.Cleanup(srv.Close)
	clk := clock.NewFake(time.Date(2040, 3, 10, 9, 0, 0, 0, time.UTC))
	const secret = "whsec_handler_test"
	var table store.Table
	open := lambdastore.Opener(routetable.GroupBilling, func(d tenants.Deps) (*groupapi.Group, error) {
		table = d.Table
		return billinggroup.New(d)
	})
	f, err := lambdaapp.New(context.Background(), routetable.GroupBilling, open, lambdaapp.Options{
		Getenv: env(map[string]string{
			"ROADEVENTS_STORE": "embedded", "ROADEVENTS_DATA": t.TempDir(),
			"STRIPE_SECRET_KEY": "sk_test_handler", "STRIPE_WEBHOOK_SECRET": secret,
			"ROADEVENTS_STRIPE_API_BASE": srv.URL,
			"STRIPE_PRICE_TEAM":          "price_team", "STRIPE_METERED_PRICE_TEAM": "price_team_reads",
			"ROADEVENTS_PLAN_TEAM_INCLUDED_READS": "1000",
		}),
		Clock: clk, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { f.Shutdown(context.Background()) })

	invokeHTTP := func(method, path string, headers map[string]string, body string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		req := events.APIGatewayV2HTTPRequest{
			Version: "2.0", RouteKey: "$default", RawPath: path, Headers: headers, Body: body,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path}},
		}
		payload, _ := json.Marshal(req)
		out, err := f.Invoke(context.Background(), payload)
		if err != nil {
			t.Fatalf("Invoke(%s %s) = %v", method, path, err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("Invoke(%s %s) answered %s: %v", method, path, out, err)
		}
		return resp
	}
	if resp := invokeHTTP(http.MethodGet, "/console/plans", nil, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /console/plans through the handler = %d %s; want 200", resp.StatusCode, resp.Body)
	}

	// A subscription with the metered item, delivered as Stripe would.
	ev, _ := json.Marshal(map[string]any{
		"id": "evt_sub", "object": "event", "type": "customer.subscription.created", "created": clk.Now().Unix(),
		"api_version": "2023-10-16",
		"data": map[string]any{"object": map[string]any{
			"id": "sub_1", "customer": "cus_1", "status": "active",
			"metadata": map[string]string{"org_id": "org_overage", "plan_id": "team"},
			"items": map[string]any{"data": []any{
				map[string]any{"id": "si_flat", "price": map[string]any{"id": "price_team"}},
				map[string]any{"id": "si_reads", "price": map[string]any{"id": "price_team_reads"}},
			}},
		}},
	})
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: ev, Secret: secret, Timestamp: time.Now()})
	if resp := invokeHTTP(http.MethodPost, "/console/billing/webhook",
		map[string]string{"content-type": "application/json", "stripe-signature": signed.Header}, string(signed.Payload)); resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook through the handler = %d %s; want 200", resp.StatusCode, resp.Body)
	}
	// 3 200 live reads: 2 200 beyond the 1 000 included, 3 units.
	meter := metering.New(table, metering.Options{Clock: clk, FlushInterval: -1})
	for range 3200 {
		meter.Count(context.Background(), "org_overage", "live", metering.Reads)
	}
	if err := meter.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	out, err := f.Invoke(context.Background(), []byte(scheduledPayload))
	if err != nil {
		t.Fatalf("Invoke(scheduled event) = %v (%s)", err, out)
	}
	stripe.mu.Lock()
	defer stripe.mu.Unlock()
	if len(stripe.calls) != 1 || stripe.paths[0] != "/v1/subscription_items/si_reads/usage_records" {
		t.Fatalf("Stripe calls %v; want one usage record for si_reads", stripe.paths)
	}
	if got := stripe.calls[0]; got.Get("action") != "set" || got.Get("quantity") != "3" {
		t.Errorf("usage record %v; want action=set quantity=3", got)
	}
}
