package geo_test

import (
	"testing"

	"github.com/roadevents/roadevents/shared/geo"
)

// Run with: go test -run '^$' -bench . -count 3 ./shared/geo/
// The cells metric is the cover or index size, what a query reads or an event writes.

func BenchmarkCoverCircle(b *testing.B) {
	center := geo.Point{Lat: 48.8566, Lon: 2.3522}
	for _, bm := range []struct {
		name   string
		radius float64
	}{
		{"radius=1000m", 1000},
		{"radius=9780m", maxQueryRadius}, // max_query_radius_m of docs/api.md §8
	} {
		b.Run(bm.name, func(b *testing.B) {
			var n int
			for b.Loop() {
				cells, err := geo.CoverCircle(center, bm.radius, geo.DefaultLevel)
				if err != nil {
					b.Fatal(err)
				}
				n = len(cells)
			}
			b.ReportMetric(float64(n), "cells")
		})
	}
}

// longLine is a 512-point LineString of about 50 km, zigzagging gently north-east.
func longLine() []geo.Point {
	line := make([]geo.Point, 512)
	line[0] = geo.Point{Lat: 48.8566, Lon: 2.3522}
	step := 50_000.0 / 511
	for i := 1; i < len(line); i++ {
		bearing := 30.0
		if i%2 == 0 {
			bearing = 60
		}
		line[i] = destination(line[i-1], bearing, step)
	}
	return line
}

func BenchmarkIndexCells(b *testing.B) {
	line := longLine()
	var n int
	for b.Loop() {
		cells, err := geo.IndexCells(line, geo.DefaultLevel)
		if err != nil {
			b.Fatal(err)
		}
		n = len(cells)
	}
	b.ReportMetric(float64(n), "cells")
	b.ReportMetric(geo.Length(line), "metres")
}

func BenchmarkDistanceToExtent(b *testing.B) {
	line := longLine()
	p := destination(line[200], 120, 300)
	for b.Loop() {
		geo.DistanceToExtent(p, line)
	}
}
