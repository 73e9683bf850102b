// Package plans is the plan catalogue of docs/api.md §10.3 (Plans: deployment values, served by GET
// /console/plans): free, team, business and enterprise, built once from the configuration.
// It decides the caps that follow a plan (the live-key cap of docs/api.md §5 API key rule 3, the seat cap
// of docs/api.md §4.3) and which plans checkout can sell. A plan's Stripe price id lives here and
// in the configuration only, never in an API body (docs/api.md §10.3): Public leaves it out.
package plans

import (
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/schema"
)

// The plan ids of docs/api.md §10.3.
const (
	Free       = "free"
	Team       = "team"
	Business   = "business"
	Enterprise = "enterprise"
)

// The free plan's values (docs/api.md §10.3: 1 live key, 3 seats, 100 000 included reads a month;
// §8: one live key on the Free plan).
const (
	FreeLiveKeyCap    = 1
	FreeSeatCap       = 3
	FreeIncludedReads = 100_000
)

// Plan is one plan of the catalogue. Caps of 0 mean uncapped.
type Plan struct {
	ID   string
	Name string
	// MonthlyPriceCents is the price shown; nil for a plan sold by agreement (enterprise).
	MonthlyPriceCents *int64
	Currency          string
	// IncludedReads a month; nil when not published (enterprise).
	IncludedReads *int64
	LiveKeyCap    int
	SeatCap       int
	// SelfServe plans are sold through checkout: team and business, when a Stripe price is
	// configured for them.
	SelfServe bool
	// PriceID is the Stripe price checkout sells; empty for the others. Never in a body.
	PriceID string
	// MeteredPriceID is the plan's metered Stripe price for reads beyond IncludedReads, per
	// 1 000; empty: no overage is charged on this plan. Never in a body.
	MeteredPriceID string
}

// Public is the PlanPublic record of docs/api.md §10.3.
type Public struct {
	PlanID            string `json:"plan_id"`
	Name              string `json:"name"`
	MonthlyPriceCents *int64 `json:"monthly_price_cents"`
	Currency          string `json:"currency"`
	IncludedReads     *int64 `json:"included_reads"`
	LiveKeyCap        *int   `json:"live_key_cap"`
	SeatCap           *int   `json:"seat_cap"`
	SelfServe         bool   `json:"self_serve"`
}

// PublicSchema documents PlanPublic in /openapi.json.
var PublicSchema = schema.Object(
	schema.Req("plan_id", schema.String()),
	schema.Req("name", schema.String()),
	schema.Req("monthly_price_cents", schema.Integer().OrNull().Describe("Price a month in cents of currency; null when sold by agreement.")),
	schema.Req("currency", schema.String().Describe("ISO 4217, lower case.")),
	schema.Req("included_reads", schema.Integer().OrNull().Describe("Reads included each calendar month; null when set by agreement.")),
	schema.Req("live_key_cap", schema.Integer().OrNull().Describe("Unrevoked live API keys allowed; null when uncapped.")),
	schema.Req("seat_cap", schema.Integer().OrNull().Describe("Members and pending invitations allowed; null when uncapped.")),
	schema.Req("self_serve", schema.Boolean().Describe("Whether checkout can sell this plan.")),
).Named("PlanPublic")

// Public returns the PlanPublic view of p: no Stripe price id, 0 caps as null.
func (p Plan) Public() Public {
	return Public{
		PlanID:            p.ID,
		Name:              p.Name,
		MonthlyPriceCents: p.MonthlyPriceCents,
		Currency:          p.Currency,
		IncludedReads:     p.IncludedReads,
		LiveKeyCap:        capOrNull(p.LiveKeyCap),
		SeatCap:           capOrNull(p.SeatCap),
		SelfServe:         p.SelfServe,
	}
}

func capOrNull(n int) *int {
	if n <= 0 {
		return nil
	}
	return &n
}

// Catalogue is the set of plans of one deployment. It is read-only once built and safe for
// concurrent use.
type Catalogue struct {
	plans []Plan
}

// New builds the catalogue from the billing configuration: free with the values of docs/api.md
// §10.3, team and business with the configured caps, prices, included reads and Stripe prices,
// enterprise sales-led and uncapped.
func New(b config.Billing) *Catalogue {
	cur := b.Currency
	if cur == "" {
		cur = config.DefaultBilling.Currency
	}
	selfServe := func(id, name string, s config.PlanSettings) Plan {
		return Plan{
			ID: id, Name: name, Currency: cur,
			MonthlyPriceCents: ptr(s.MonthlyPriceCents),
			IncludedReads:     ptr(s.IncludedReads),
			LiveKeyCap:        s.LiveKeyCap,
			SeatCap:           s.SeatCap,
			SelfServe:         s.PriceID != "",
			PriceID:           s.PriceID,
			MeteredPriceID:    s.MeteredPriceID,
		}
	}
	return &Catalogue{plans: []Plan{
		{
			ID: Free, Name: "Free", Currency: cur,
			MonthlyPriceCents: ptr(0), IncludedReads: ptr(FreeIncludedReads),
			LiveKeyCap: FreeLiveKeyCap, SeatCap: FreeSeatCap,
		},
		selfServe(Team, "Team", b.Team),
		selfServe(Business, "Business", b.Business),
		{ID: Enterprise, Name: "Enterprise", Currency: cur},
	}}
}

func ptr(n int64) *int64 { return &n }

// All returns every plan, cheapest first.
func (c *Catalogue) All() []Plan {
	return append([]Plan(nil), c.plans...)
}

// Get returns the plan with id, and false for an unknown id.
func (c *Catalogue) Get(id string) (Plan, bool) {
	for _, p := range c.plans {
		if p.ID == id {
			return p, true
		}
	}
	return Plan{}, false
}

// ByPriceID returns the self-serve plan sold at the Stripe price id, and false when none is:
// how a subscription reported by Stripe is turned back into a plan.
func (c *Catalogue) ByPriceID(priceID string) (Plan, bool) {
	if priceID == "" {
		return Plan{}, false
	}
	for _, p := range c.plans {
		if p.PriceID == priceID {
			return p, true
		}
	}
	return Plan{}, false
}

// IsMeteredPrice reports whether priceID is the metered price of a plan: how the subscription
// item that usage is reported on is found among a subscription's items.
func (c *Catalogue) IsMeteredPrice(priceID string) bool {
	if priceID == "" {
		return false
	}
	for _, p := range c.plans {
		if p.MeteredPriceID == priceID {
			return true
		}
	}
	return false
}

// Caps returns the live-key and seat caps of plan id (0 = uncapped), in the shape of
// orgs.Options.Caps. An unknown id gets the free plan's caps: an organisation whose plan is
// not in this deployment's catalogue must not become uncapped.
func (c *Catalogue) Caps(id string) (liveKeyCap, seatCap int) {
	p, ok := c.Get(id)
	if !ok {
		return FreeLiveKeyCap, FreeSeatCap
	}
	return p.LiveKeyCap, p.SeatCap
}
