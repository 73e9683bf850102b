package geo_test

import (
	"fmt"

	"github.com/roadevents/roadevents/shared/geo"
)

// A query point 30 m from the middle of a 100 km segment: the segment is returned although both
// of its vertices are 50 km away (docs/api.md §4.1 rule 3).
func ExampleDistanceToExtent() {
	segment := []geo.Point{{Lat: 0, Lon: 9.55}, {Lat: 0, Lon: 10.45}}
	p := geo.Point{Lat: 0.00027, Lon: 10}
	fmt.Printf("%.0f m to the segment, %.0f km to its start\n", geo.DistanceToExtent(p, segment), geo.Distance(p, segment[0])/1000)
	// Output: 30 m to the segment, 50 km to its start
}

// An event is stored under IndexCells of its extent; a query reads CoverCircle of its circle.
// The two meet whenever the extent is within the radius.
func ExampleCoverCircle() {
	event := []geo.Point{{Lat: 45.0, Lon: 5.0}, {Lat: 45.0, Lon: 5.3}}
	stored, _ := geo.IndexCells(event, geo.DefaultLevel)
	read, _ := geo.CoverCircle(geo.Point{Lat: 45.005, Lon: 5.15}, 1000, geo.DefaultLevel)
	met := false
	for _, c := range read {
		for _, s := range stored {
			met = met || c == s
		}
	}
	fmt.Println("found:", met)
	// Output: found: true
}
