package eventstore_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/eventstore"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// exportGet asks an export with key, sending ifNoneMatch when set.
func (h *harness) exportGet(path, key, ifNoneMatch string) (int, http.Header, []byte) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if ifNoneMatch != "" {
		req.Header.Set("If-None-Match", ifNoneMatch)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

// exportedIDs reads the event ids of an export, whatever its format.
func exportedIDs(t *testing.T, format string, body []byte) []string {
	t.Helper()
	var doc struct {
		Incidents []struct {
			Incident struct{ ID string } `json:"incident"`
		} `json:"incidents"`
		Features []struct{ ID string } `json:"features"`
		Payload  struct {
			Publication struct {
				Situation []struct {
					ID string `json:"idG"`
				} `json:"situation"`
			} `json:"sitSituationPublication"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("%s export is not JSON: %v\n%s", format, err, body)
	}
	var ids []string
	for _, i := range doc.Incidents {
		ids = append(ids, i.Incident.ID)
	}
	for _, f := range doc.Features {
		ids = append(ids, f.ID)
	}
	for _, s := range doc.Payload.Publication.Situation {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// docs/interop.md §7: GET /v1/exports/{format} serves the area query's active events in the
// format, as the key sees them (a live key live events, a sandbox key both), leaves out the
// types the format cannot say and counts them in a header, and is metered as a read.
func TestExportsServeTheAreaInEachFormat(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		h := newHarness(t, tab)
		live, sandbox := h.key("org_exp", apikey.Live), h.key("org_exp", apikey.Sandbox)
		accident := h.publish(live, point("accident", 48.137, 11.575).with("heading", 90).with("road_ref", "A9"))
		works := h.publish(live, point("roadworks", 48.138, 11.576))
		damage := h.publish(live, point("road_damage", 48.136, 11.574))
		wrongWay := h.publish(live, point("wrong_way_vehicle", 48.139, 11.575))
		test := h.publish(sandbox, point("accident", 48.1375, 11.5755))
		h.publish(live, point("accident", 48.30, 11.575)) // 18 km away
		sorted := func(ids ...string) []string { slices.Sort(ids); return ids }
		want := map[string][]string{
			"cifs":   sorted(accident.EventID, works.EventID, damage.EventID),
			"wzdx":   {works.EventID},
			"tdx":    {accident.EventID},
			"datex2": sorted(accident.EventID, works.EventID, wrongWay.EventID),
		}
		types := map[string]string{"cifs": "application/json", "wzdx": "application/geo+json", "tdx": "application/geo+json", "datex2": "application/json"}
		reads := h.usage("org_exp", apikey.Live).Reads
		for format, ids := range want {
			status, header, body := h.exportGet("/v1/exports/"+format+"?"+q(48.137, 11.575, "radius=2000"), live, "")
			if status != http.StatusOK || header.Get("Content-Type") != types[format] {
				t.Fatalf("%s: %d %s %s; want 200 %s", format, status, header.Get("Content-Type"), body, types[format])
			}
			if got := exportedIDs(t, format, body); !slices.Equal(got, ids) {
				t.Errorf("%s carries %v; want %v", format, got, ids)
			}
			if got, want := header.Get(eventstore.OmittedHeader), strconv.Itoa(4-len(ids)); got != want {
				t.Errorf("%s: %s %q; want %s", format, eventstore.OmittedHeader, got, want)
			}
		}
		if got := h.usage("org_exp", apikey.Live).Reads - reads; got != 4 {
			t.Errorf("four exports counted %d reads; want 4", got)
		}
		_, _, body := h.exportGet("/v1/exports/tdx?"+q(48.137, 11.575, "radius=2000"), sandbox, "")
		if got := exportedIDs(t, "tdx", body); !slices.Equal(got, sorted(accident.EventID, test.EventID)) {
			t.Errorf("sandbox key's tdx carries %v; want the live and the sandbox accident", got)
		}
		// A key is needed, as for GET /v1/events.
		if status, _, _ := h.exportGet("/v1/exports/cifs?"+q(48.137, 11.575), "rk_live_nope", ""); status != http.StatusUnauthorized {
			t.Errorf("an unknown key's export = %d; want 401", status)
		}
	})
}

// docs/interop.md §7: the ETag names the events of the answer; sent back in If-None-Match it
// is answered 304 with no body until the events change.
func TestExportsAnswerNotModified(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		h := newHarness(t, tab)
		key := h.key("org_etag", apikey.Live)
		h.publish(key, point("accident", 48.137, 11.575))
		path := "/v1/exports/datex2?" + q(48.137, 11.575)
		_, header, _ := h.exportGet(path, key, "")
		etag := header.Get("ETag")
		if etag == "" || header.Get("Cache-Control") != "private, no-cache" {
			t.Fatalf("ETag %q, Cache-Control %q; want an ETag and private, no-cache", etag, header.Get("Cache-Control"))
		}
		tab.Clock.Advance(time.Second)
		if status, _, body := h.exportGet(path, key, etag); status != http.StatusNotModified || len(body) != 0 {
			t.Errorf("unchanged events with If-None-Match = %d %q; want 304 and no body", status, body)
		}
		h.publish(key, point("object_on_road", 48.1371, 11.5751))
		status, header, _ := h.exportGet(path, key, etag)
		if status != http.StatusOK || header.Get("ETag") == etag {
			t.Errorf("after a publish = %d with ETag %s; want 200 and a new ETag", status, header.Get("ETag"))
		}
	})
}

// docs/interop.md §7: a bounding box instead of a circle; bad or conflicting areas are 422 at
// the parameter that is wrong (docs/api.md §7, shape 2).
func TestExportsTakeABoundingBox(t *testing.T) {
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		h := newHarness(t, tab)
		key := h.key("org_box", apikey.Live)
		inside := h.publish(key, point("accident", 48.137, 11.575))
		h.publish(key, point("accident", 48.137, 11.60)) // east of the box, within its circle
		status, _, body := h.exportGet("/v1/exports/cifs?bbox=11.56,48.13,11.59,48.14", key, "")
		if got := exportedIDs(t, "cifs", body); status != http.StatusOK || !slices.Equal(got, []string{inside.EventID}) {
			t.Errorf("bbox export = %d %v; want 200 and only the event inside", status, got)
		}
		for query, loc := range map[string]string{
			"bbox=11.56,48.13,11.59,48.14&lat=48.1&lon=11.5": `["query","bbox"]`,
			"bbox=11.59,48.13,11.56,48.14":                   `["query","bbox"]`,
			"bbox=11.56,48.13,11.59":                         `["query","bbox"]`,
			"bbox=a,b,c,d":                                   `["query","bbox"]`,
			"bbox=10,47,13,49":                               `["query","bbox"]`, // far past the largest radius
			"lat=48.1":                                       `["query","lon"]`,
			"":                                               `["query","lat"]`,
			"lat=48.1&lon=11.5&radius=1e9":                   `["query","radius"]`,
		} {
			r := h.do("GET", "/v1/exports/wzdx?"+query, key, nil)
			found := false
			for _, p := range r.problems(t) {
				found = found || p.Loc == loc
			}
			if !found {
				t.Errorf("GET /v1/exports/wzdx?%s = %s; want a 422 item at %s", query, r.Response, loc)
			}
		}
	})
}

// BenchmarkExport500 asks each export for an area of 500 active events of every type over
// HTTP, on the embedded store: the query, decoding the events, rendering and sending.
//
//	go test -run '^$' -bench Export500 ./shared/eventstore
func BenchmarkExport500(b *testing.B) {
	h := newHarness(b, tables.Embedded(b))
	key := h.key("org_bench", apikey.Live)
	types := []string{"accident", "stopped_vehicle", "object_on_road", "weather_hazard", "congestion", "wrong_way_vehicle",
		"road_damage", "people_on_road", "police_check", "road_closure", "infrastructure_fault", "roadworks"}
	for i := range 500 {
		h.publish(key, point(types[i%len(types)], 48.13+float64(i%25)*0.001, 11.57+float64(i/25)*0.001).with("heading", i%360))
	}
	for _, format := range []string{"cifs", "wzdx", "tdx", "datex2"} {
		b.Run(format, func(b *testing.B) {
			path := "/v1/exports/" + format + "?" + q(48.14, 11.58, "radius=3000")
			var size int
			for b.Loop() {
				status, _, body := h.exportGet(path, key, "")
				if status != http.StatusOK {
					b.Fatalf("%s: %d %s", format, status, body)
				}
				size = len(body)
			}
			b.ReportMetric(float64(size), "bytes/doc")
		})
	}
}
