package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// fakeServer answers the routes the generator uses as the interface says (docs/api.md §4.1, §7):
// publish with the domain's own validation and idempotency by client_event_id, and area
// queries by exact distance to each extent, nearest first, capped at 500. It stands in for
// shared/eventstore so the generator is tested on its own.
type fakeServer struct {
	key string
	// failEvery makes every failEvery-th query answer 500 (0: never).
	failEvery int
	// idless answers queries with objects that do not open with an id, unlike EventPublic.
	idless bool

	mu       sync.Mutex
	bodies   map[string][]byte // published bodies by client_event_id
	extents  [][]geo.Point
	queries  int
	returned int // events returned by all queries
}

const fakeMaxEvents = 500 // docs/api.md §8: events per area query

func newFake(t *testing.T, key string) (*fakeServer, *httptest.Server) {
	t.Helper()
	f := &fakeServer{key: key, bodies: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/meta/taxonomy", f.taxonomy)
	mux.HandleFunc("POST /v1/events", f.auth(f.publish))
	mux.HandleFunc("GET /v1/events", f.auth(f.list))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeServer) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+f.key {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeJSON(w, http.StatusUnauthorized, map[string]string{"detail": "Invalid or revoked API key"})
			return
		}
		h(w, r)
	}
}

func (f *fakeServer) taxonomy(w http.ResponseWriter, _ *http.Request) {
	type spec struct {
		ID       string   `json:"id"`
		Subtypes []string `json:"subtypes"`
	}
	doc := struct {
		SchemaVersion int    `json:"schema_version"`
		Types         []spec `json:"types"`
	}{SchemaVersion: taxonomy.SchemaVersion}
	for _, ty := range taxonomy.All() {
		doc.Types = append(doc.Types, spec{ID: ty.ID, Subtypes: ty.Subtypes})
	}
	writeJSON(w, http.StatusOK, doc)
}

func (f *fakeServer) publish(w http.ResponseWriter, r *http.Request) {
	var raw bytes.Buffer
	if _, err := raw.ReadFrom(r.Body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "unreadable body"})
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Bytes()))
	dec.UseNumber()
	var body any
	if err := dec.Decode(&body); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": "json_invalid"})
		return
	}
	if errs := event.ValidateEventIn(body, time.Now()); errs != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": errs})
		return
	}
	var e eventIn
	if err := json.Unmarshal(raw.Bytes(), &e); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": err.Error()})
		return
	}
	extent := []geo.Point{{Lat: e.Lat, Lon: e.Lon}}
	if e.Geometry != nil {
		extent = extent[:0]
		for _, c := range e.Geometry.Coordinates {
			extent = append(extent, geo.Point{Lat: c[1], Lon: c[0]})
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if prev, ok := f.bodies[e.ClientEventID]; ok {
		if !bytes.Equal(prev, raw.Bytes()) {
			writeJSON(w, http.StatusConflict, map[string]string{"detail": "client_event_id reused with different content"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"client_event_id": e.ClientEventID})
		return
	}
	f.bodies[e.ClientEventID] = slices.Clone(raw.Bytes())
	f.extents = append(f.extents, extent)
	writeJSON(w, http.StatusCreated, map[string]string{"client_event_id": e.ClientEventID})
}

func (f *fakeServer) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lat, err1 := strconv.ParseFloat(q.Get("lat"), 64)
	lon, err2 := strconv.ParseFloat(q.Get("lon"), 64)
	radius, err3 := strconv.ParseFloat(q.Get("radius"), 64)
	if err1 != nil || err2 != nil || err3 != nil || radius <= 0 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": "bad query"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries++
	if f.failEvery > 0 && f.queries%f.failEvery == 0 {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": "Internal Server Error"})
		return
	}
	type hit struct { // an event's id first, as EventPublic has it (countEvents)
		ID       string  `json:"event_id,omitempty"`
		Index    int     `json:"index"`
		Distance float64 `json:"distance_m"`
	}
	hits := []hit{}
	p := geo.Point{Lat: lat, Lon: lon}
	for i, ext := range f.extents {
		if d := geo.DistanceToExtent(p, ext); d <= radius {
			h := hit{Index: i, Distance: d}
			if !f.idless {
				h.ID = fmt.Sprintf("ev_%d", i)
			}
			hits = append(hits, h)
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		switch {
		case a.Distance < b.Distance:
			return -1
		case a.Distance > b.Distance:
			return 1
		}
		return 0
	})
	if len(hits) > fakeMaxEvents {
		hits = hits[:fakeMaxEvents]
	}
	f.returned += len(hits)
	writeJSON(w, http.StatusOK, hits)
}

// stats returns what the fake has seen.
func (f *fakeServer) stats() (published, queries, returned int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies), f.queries, f.returned
}
