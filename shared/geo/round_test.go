package geo_test

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/geo"
)

// TestRound5 checks docs/api.md §2.2: coordinates are rounded to 5 decimals (about 1 m) on write,
// half away from zero, as a client reading its own request would round.
func TestRound5(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   float64
		want float64
	}{
		{"already five decimals", 48.85661, 48.85661},
		{"integer", 7, 7},
		{"rounds down", 48.856614, 48.85661},
		{"rounds up", 48.856616, 48.85662},
		{"tie goes away from zero", 2.000005, 2.00001},
		{"negative tie goes away from zero", -2.000005, -2.00001},
		{"tie whose binary value is just below half", 0.000015, 0.00002},
		{"tie that is exact in binary", 0.015625, 0.01563},
		{"negative tie that is exact in binary", -0.015625, -0.01563},
		{"carry into the integer part", 179.999995, 180},
		{"negative carry into the integer part", -89.999996, -90},
		{"many digits", 12.3456789012345, 12.34568},
		{"tiny negative becomes plain zero", -0.000004, 0},
		{"negative zero becomes plain zero", math.Copysign(0, -1), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := geo.Round5(tt.in)
			if got != tt.want || math.Signbit(got) != math.Signbit(tt.want) {
				t.Errorf("Round5(%v) = %v; want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestRound5NonFinite(t *testing.T) {
	t.Parallel()
	if got := geo.Round5(math.NaN()); !math.IsNaN(got) {
		t.Errorf("Round5(NaN) = %v; want NaN", got)
	}
	if got := geo.Round5(math.Inf(-1)); !math.IsInf(got, -1) {
		t.Errorf("Round5(-Inf) = %v; want -Inf", got)
	}
}

// TestRound5Properties: for any coordinate, the stored value prints with at most 5 decimals,
// is within half a unit of the fifth decimal of the input, and rounding again changes nothing
// (so a replay of the same content compares equal, docs/api.md §10.2 "identical content").
func TestRound5Properties(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	for range 20_000 {
		in := rng.Float64()*360 - 180
		got := geo.Round5(in)
		if _, frac, _ := strings.Cut(strconv.FormatFloat(got, 'f', -1, 64), "."); len(frac) > 5 {
			t.Fatalf("Round5(%v) = %v; want at most 5 decimals", in, got)
		}
		if math.Abs(got-in) > 0.5e-5+1e-12 {
			t.Fatalf("Round5(%v) = %v; want within 0.000005 of the input", in, got)
		}
		if again := geo.Round5(got); again != got {
			t.Fatalf("Round5(Round5(%v)) = %v; want %v unchanged", in, again, got)
		}
	}
}
