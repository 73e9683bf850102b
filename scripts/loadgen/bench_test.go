package main

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkCountArray counts a 9780 m answer: 500 events, about 325 KB, as loadgen does
// for one query in fullCheckEvery while sharing the machine with the server.
func BenchmarkCountArray(b *testing.B) {
	benchmarkCount(b, countArray)
}

// BenchmarkCountEvents counts the same answer as loadgen does for every query.
func BenchmarkCountEvents(b *testing.B) {
	benchmarkCount(b, countEvents)
}

func benchmarkCount(b *testing.B, count func([]byte) (int, error)) {
	var body bytes.Buffer
	body.WriteByte('[')
	for i := range 500 {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"event_id":"ev_%026d","type":"congestion","subtype":null,"severity":"medium",`+
			`"description":"queue of about %d metres \"slow\" \\ moving","lat":48.85123,"lon":2.35123,`+
			`"geometry":{"type":"LineString","coordinates":[[2.35123,48.85123],[2.35223,48.85223],[2.35323,48.85323]]},`+
			`"status":"active","confidence":0.5,"confirm_count":0,"deny_count":0,"verified":false,`+
			`"created_at":"2026-11-21T19:00:00Z","updated_at":"2026-11-21T19:00:00Z","expires_at":"2026-11-21T19:15:00Z",`+
			`"occurred_at":"2026-11-21T18:59:00Z","environment":"live","org_id":"org_loadtest","reporter_org":"org_loadtest",`+
			`"extra":"%0300d"}`, i, i*10, i)
	}
	body.WriteByte(']')
	b.SetBytes(int64(body.Len()))
	for b.Loop() {
		n, err := count(body.Bytes())
		if err != nil || n != 500 {
			b.Fatalf("count = %d, %v; want 500", n, err)
		}
	}
}
