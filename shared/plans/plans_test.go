package plans_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/plans"
)

func catalogue() *plans.Catalogue {
	b := config.DefaultBilling
	b.Team.PriceID = "price_team_secret"
	b.Team.LiveKeyCap, b.Team.SeatCap = 5, 10
	return plans.New(b)
}

// docs/api.md §10.3: free has 1 live key, 3 seats, 100 000 included reads; team and business take
// their caps from configuration; enterprise is sales-led and uncapped; an unknown plan keeps
// the free caps rather than none.
func TestCaps(t *testing.T) {
	t.Parallel()
	c := catalogue()
	for _, tc := range []struct {
		name, plan  string
		keys, seats int
	}{
		{"free", plans.Free, 1, 3},
		{"team from configuration", plans.Team, 5, 10},
		{"business default", plans.Business, config.DefaultBilling.Business.LiveKeyCap, config.DefaultBilling.Business.SeatCap},
		{"enterprise uncapped", plans.Enterprise, 0, 0},
		{"unknown plan gets free caps", "platinum", 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			keys, seats := c.Caps(tc.plan)
			if keys != tc.keys || seats != tc.seats {
				t.Errorf("Caps(%q) = %d, %d; want %d, %d", tc.plan, keys, seats, tc.keys, tc.seats)
			}
		})
	}
}

// docs/api.md §10.3 PlanPublic: every field present, caps and prices null where none apply,
// self_serve only for a plan checkout can sell, and never the Stripe price id.
func TestPublic(t *testing.T) {
	t.Parallel()
	c := catalogue()
	var got []map[string]any
	var pubs []plans.Public
	for _, p := range c.All() {
		pubs = append(pubs, p.Public())
	}
	raw, err := json.Marshal(pubs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "price_team_secret") {
		t.Errorf("plans JSON %s holds a Stripe price id (docs/api.md §10.3)", raw)
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"free":       {"name": "Free", "monthly_price_cents": 0.0, "included_reads": 100000.0, "live_key_cap": 1.0, "seat_cap": 3.0, "self_serve": false, "currency": "usd"},
		"team":       {"live_key_cap": 5.0, "seat_cap": 10.0, "self_serve": true, "monthly_price_cents": 4900.0},
		"business":   {"self_serve": false}, // no price id configured: not buyable
		"enterprise": {"monthly_price_cents": nil, "included_reads": nil, "live_key_cap": nil, "seat_cap": nil, "self_serve": false},
	}
	if len(got) != len(want) {
		t.Fatalf("%d plans; want %d", len(got), len(want))
	}
	for _, p := range got {
		id, _ := p["plan_id"].(string)
		if len(p) != 8 {
			t.Errorf("plan %s has %d fields; want the 8 of PlanPublic: %v", id, len(p), p)
		}
		for k, v := range want[id] {
			if p[k] != v {
				t.Errorf("plan %s %s = %v; want %v", id, k, p[k], v)
			}
		}
	}
}

// A Stripe subscription names a price; the plan it sells is found from it, and an empty or
// foreign price names none.
func TestByPriceID(t *testing.T) {
	t.Parallel()
	c := catalogue()
	if p, ok := c.ByPriceID("price_team_secret"); !ok || p.ID != plans.Team {
		t.Errorf("ByPriceID(team's price) = %q, %v; want team, true", p.ID, ok)
	}
	for _, id := range []string{"", "price_other"} {
		if p, ok := c.ByPriceID(id); ok {
			t.Errorf("ByPriceID(%q) = %q, true; want false", id, p.ID)
		}
	}
}

// The subscription item usage is reported on is found by its price: only a plan's metered
// price is one, not its flat price, an empty or a foreign one.
func TestIsMeteredPrice(t *testing.T) {
	t.Parallel()
	b := config.DefaultBilling
	b.Team.PriceID, b.Team.MeteredPriceID = "price_team", "price_team_reads"
	c := plans.New(b)
	for _, tc := range []struct {
		name, price string
		want        bool
	}{
		{"team's metered price", "price_team_reads", true},
		{"team's flat price", "price_team", false},
		{"empty (business has no metered price)", "", false},
		{"foreign price", "price_other", false},
	} {
		if got := c.IsMeteredPrice(tc.price); got != tc.want {
			t.Errorf("%s: IsMeteredPrice(%q) = %v; want %v", tc.name, tc.price, got, tc.want)
		}
	}
	if p, ok := c.ByPriceID("price_team_reads"); ok {
		t.Errorf("ByPriceID(metered price) = %q; want no plan: the flat price decides the plan", p.ID)
	}
}
