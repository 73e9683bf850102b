package config_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/roadevents/roadevents/shared/config"
)

// docs/api.md §10.4: billing is off unless STRIPE_SECRET_KEY is set; the plans' deployment values
// have defaults and can be overridden (the plans of docs/api.md §10.3).
func TestBillingFromEnv(t *testing.T) {
	t.Parallel()
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Billing.Configured() {
		t.Errorf("Billing.Configured() = true without STRIPE_SECRET_KEY; want false (docs/api.md §10.4)")
	}
	if c.Billing.Team.PriceID != "" || c.Billing.Team.LiveKeyCap == 0 || c.Billing.Team.SeatCap == 0 || c.Billing.Currency != "usd" {
		t.Errorf("default Billing = %+v; want no price ids, team caps set, usd", c.Billing)
	}
	c, err = config.FromEnv(env(map[string]string{
		"STRIPE_SECRET_KEY":                       "sk_test_secret",
		"STRIPE_WEBHOOK_SECRET":                   "whsec_secret",
		"STRIPE_PRICE_TEAM":                       "price_team",
		"STRIPE_PRICE_BUSINESS":                   "price_business",
		"STRIPE_METERED_PRICE_TEAM":               "price_team_reads",
		"ROADEVENTS_STRIPE_API_BASE":              "http://127.0.0.1:12111/",
		"ROADEVENTS_BILLING_CURRENCY":             "EUR",
		"ROADEVENTS_PLAN_TEAM_LIVE_KEYS":          "7",
		"ROADEVENTS_PLAN_TEAM_SEATS":              "12",
		"ROADEVENTS_PLAN_TEAM_PRICE_CENTS":        "5900",
		"ROADEVENTS_PLAN_BUSINESS_INCLUDED_READS": "20_000_000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	b := c.Billing
	if !b.Configured() || b.StripeAPIBase != "http://127.0.0.1:12111" || b.Currency != "eur" {
		t.Errorf("Billing = configured %v, base %q, currency %q; want true, no trailing slash, eur", b.Configured(), b.StripeAPIBase, b.Currency)
	}
	if b.Team != (config.PlanSettings{PriceID: "price_team", MeteredPriceID: "price_team_reads", MonthlyPriceCents: 5900, IncludedReads: 1_000_000, LiveKeyCap: 7, SeatCap: 12}) {
		t.Errorf("Team = %+v; want the variables' values over the defaults", b.Team)
	}
	if b.Business.PriceID != "price_business" || b.Business.IncludedReads != 20_000_000 || b.Business.MeteredPriceID != "" {
		t.Errorf("Business = %+v; want price_business, 20 000 000 included reads, no metered price", b.Business)
	}
	for name, v := range map[string]string{
		"ROADEVENTS_STRIPE_API_BASE":           "localhost:12111",
		"ROADEVENTS_BILLING_CURRENCY":          "euro",
		"ROADEVENTS_PLAN_TEAM_SEATS":           "-1",
		"ROADEVENTS_PLAN_BUSINESS_PRICE_CENTS": "many",
	} {
		if _, err := config.FromEnv(env(map[string]string{name: v})); err == nil {
			t.Errorf("%s=%q accepted; want an error", name, v)
		}
	}
}

// The Stripe keys are secrets: neither logging nor printing a Billing shows them.
func TestBillingHidesSecrets(t *testing.T) {
	t.Parallel()
	b := config.DefaultBilling
	b.StripeSecretKey, b.StripeWebhookSecret = "sk_live_topsecret", "whsec_topsecret"
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("config", "billing", b)
	for _, out := range []string{logged.String(), fmt.Sprint(b), fmt.Sprintf("%+v", b)} {
		if strings.Contains(out, "topsecret") {
			t.Errorf("output %q holds a Stripe secret", out)
		}
	}
}
