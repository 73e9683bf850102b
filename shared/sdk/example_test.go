package sdk_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/roadevents/roadevents/shared/sdk"
	"github.com/roadevents/roadevents/shared/webhooks/signature"
)

// A query of the events around a point. The stand-in server answers as the service does.
func ExampleClient_Query() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `[{"event_id":"ev_aaaaaaaaaaaaaaaaaaaaaaaaaa","type":"accident","lat":48.1372,"lon":11.5755,"confidence":0.667,"status":"active"}]`)
	}))
	defer srv.Close()

	c := sdk.New(srv.URL, "svc_live_...")
	events, err := c.Query(context.Background(), sdk.Area{Lat: 48.1372, Lon: 11.5755, RadiusM: 2000, Types: []string{"accident"}})
	if err != nil {
		fmt.Println("query:", err)
		return
	}
	for _, ev := range events {
		fmt.Println(ev.EventID, ev.Type, ev.Confidence)
	}
	// Output: ev_aaaaaaaaaaaaaaaaaaaaaaaaaa accident 0.667
}

// A refusal is an *sdk.APIError: its status, and for a 422 the items at fault.
func ExampleAPIError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"detail":[{"type":"enum","loc":["body","type"],"msg":"Input should be 'accident', ...","input":"tornado"}]}`)
	}))
	defer srv.Close()

	_, _, err := sdk.New(srv.URL, "svc_live_...").Publish(context.Background(), sdk.EventIn{Type: "tornado", Lat: 48.1, Lon: 11.5})
	fmt.Println(sdk.StatusOf(err))
	if e, ok := err.(*sdk.APIError); ok {
		fmt.Println(e.Validation[0].Loc)
	}
	// Output:
	// 422
	// [body type]
}

// A receiver of an endpoint's deliveries, mounted on the path the endpoint names.
func ExampleReceiver() {
	rc := &sdk.Receiver{
		Secrets: []string{"whsec_0123"},
		Handle: func(_ *http.Request, d sdk.Delivery) error {
			fmt.Println(d.Kind, d.Data.Event.EventID)
			return nil // stored: the service stops sending it
		},
	}
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/roadevents", rc)

	// What the service sends.
	body := `{"id":"dlv_1","kind":"event.confirmed","created_at":"2040-01-01T12:00:00Z","environment":"live","data":{"event":{"event_id":"ev_aaaaaaaaaaaaaaaaaaaaaaaaaa"}}}`
	req := httptest.NewRequest("POST", "/hooks/roadevents", strings.NewReader(body))
	req.Header.Set(signature.Header, signature.Sign(time.Now(), []byte(body), "whsec_0123"))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	// Output:
	// event.confirmed ev_aaaaaaaaaaaaaaaaaaaaaaaaaa
	// 200
}
