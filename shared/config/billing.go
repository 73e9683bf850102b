package config

import (
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Billing configures the plans (docs/api.md §10.3: deployment values, served by GET
// /console/plans) and Stripe. Billing is off unless StripeSecretKey is set (docs/api.md §10.4).
// The Stripe keys are secrets: Billing's LogValue hides them, and nothing else prints them.
type Billing struct {
	// StripeSecretKey is the Stripe API key (STRIPE_SECRET_KEY); empty turns billing off:
	// checkout and portal answer 503 and the summary says billing_configured false.
	StripeSecretKey string
	// StripeWebhookSecret verifies the Stripe-Signature of webhooks (STRIPE_WEBHOOK_SECRET,
	// whsec_...); without it every webhook is refused.
	StripeWebhookSecret string
	// StripeAPIBase overrides Stripe's API address (ROADEVENTS_STRIPE_API_BASE), for
	// stripe-mock in tests and local runs; empty means https://api.stripe.com.
	StripeAPIBase string
	// Currency of the plans' prices, ISO 4217 lower case as Stripe writes it
	// (ROADEVENTS_BILLING_CURRENCY).
	Currency string
	// Team and Business are the self-serve plans (docs/api.md §10.3).
	Team     PlanSettings
	Business PlanSettings
}

// PlanSettings are the deployment values of one self-serve plan. Caps of 0 mean uncapped.
type PlanSettings struct {
	// PriceID is the plan's Stripe price (STRIPE_PRICE_<PLAN>); without one the plan cannot
	// be bought through checkout. Never sent in an API body (docs/api.md §10.3).
	PriceID string
	// MeteredPriceID is the plan's metered Stripe price for reads beyond IncludedReads, per
	// 1 000 (STRIPE_METERED_PRICE_<PLAN>; docs/console.md §3): checkout adds
	// it as a second line item and the overage job reports usage on it. Without one the
	// plan has no overage charge.
	MeteredPriceID string
	// MonthlyPriceCents is shown in GET /console/plans (ROADEVENTS_PLAN_<PLAN>_PRICE_CENTS);
	// Stripe's price decides what is charged, so keep them equal.
	MonthlyPriceCents int64
	// IncludedReads a month before metered overage (ROADEVENTS_PLAN_<PLAN>_INCLUDED_READS).
	IncludedReads int64
	// LiveKeyCap and SeatCap (ROADEVENTS_PLAN_<PLAN>_LIVE_KEYS, ROADEVENTS_PLAN_<PLAN>_SEATS).
	LiveKeyCap int
	SeatCap    int
}

// DefaultBilling is billing off, with the plans' default deployment values. Prices are in
// cents of DefaultBilling.Currency.
var DefaultBilling = Billing{
	Currency: "usd",
	Team:     PlanSettings{MonthlyPriceCents: 4900, IncludedReads: 1_000_000, LiveKeyCap: 5, SeatCap: 10},
	Business: PlanSettings{MonthlyPriceCents: 19900, IncludedReads: 10_000_000, LiveKeyCap: 25, SeatCap: 50},
}

// Configured reports whether billing is on (docs/api.md §10.4: off unless STRIPE_SECRET_KEY is
// set).
func (b Billing) Configured() bool { return b.StripeSecretKey != "" }

// LogValue describes the billing configuration without its secrets, so that logging a
// Billing (or a Config holding one) can never leak a key.
func (b Billing) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("configured", b.Configured()),
		slog.Bool("webhook_secret_set", b.StripeWebhookSecret != ""),
		slog.String("stripe_api_base", b.StripeAPIBase),
		slog.String("currency", b.Currency),
		slog.Bool("team_price_set", b.Team.PriceID != ""),
		slog.Bool("business_price_set", b.Business.PriceID != ""),
		slog.Bool("team_metered_price_set", b.Team.MeteredPriceID != ""),
		slog.Bool("business_metered_price_set", b.Business.MeteredPriceID != ""),
	)
}

// String is LogValue's text, so that %v prints no secret either.
func (b Billing) String() string { return b.LogValue().String() }

var currencyRE = regexp.MustCompile(`^[a-z]{3}$`)

// readBilling applies the billing variables of getenv.
func (c *Config) readBilling(getenv func(string) string) error {
	b := &c.Billing
	setString(&b.StripeSecretKey, strings.TrimSpace(getenv("STRIPE_SECRET_KEY")))
	setString(&b.StripeWebhookSecret, strings.TrimSpace(getenv("STRIPE_WEBHOOK_SECRET")))
	if v := getenv("ROADEVENTS_STRIPE_API_BASE"); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("config: ROADEVENTS_STRIPE_API_BASE=%q: want an http(s) URL", v)
		}
		b.StripeAPIBase = strings.TrimRight(v, "/")
	}
	if v := getenv("ROADEVENTS_BILLING_CURRENCY"); v != "" {
		v = strings.ToLower(v)
		if !currencyRE.MatchString(v) {
			return fmt.Errorf("config: ROADEVENTS_BILLING_CURRENCY=%q: want a 3-letter ISO 4217 code", v)
		}
		b.Currency = v
	}
	for _, p := range []struct {
		name string
		dst  *PlanSettings
	}{{"TEAM", &b.Team}, {"BUSINESS", &b.Business}} {
		setString(&p.dst.PriceID, strings.TrimSpace(getenv("STRIPE_PRICE_"+p.name)))
		setString(&p.dst.MeteredPriceID, strings.TrimSpace(getenv("STRIPE_METERED_PRICE_"+p.name)))
		prefix := "ROADEVENTS_PLAN_" + p.name + "_"
		if err := setInt64(&p.dst.MonthlyPriceCents, prefix+"PRICE_CENTS", getenv); err != nil {
			return err
		}
		if err := setInt64(&p.dst.IncludedReads, prefix+"INCLUDED_READS", getenv); err != nil {
			return err
		}
		var keys, seats = int64(p.dst.LiveKeyCap), int64(p.dst.SeatCap)
		if err := setInt64(&keys, prefix+"LIVE_KEYS", getenv); err != nil {
			return err
		}
		if err := setInt64(&seats, prefix+"SEATS", getenv); err != nil {
			return err
		}
		p.dst.LiveKeyCap, p.dst.SeatCap = int(keys), int(seats)
	}
	return nil
}

// setInt64 reads a non-negative integer variable into dst when it is set.
func setInt64(dst *int64, name string, getenv func(string) string) error {
	v := getenv(name)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil || n < 0 || n > 1<<31-1 {
		return fmt.Errorf("config: %s=%q: want a whole number from 0 to %d", name, v, 1<<31-1)
	}
	*dst = n
	return nil
}
