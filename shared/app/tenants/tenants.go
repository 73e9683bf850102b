// Package tenants builds what every route group on the table builds on (docs/architecture.md
// §4): the console's identity and organisations, with the adapters they need (mailer,
// sealer), the middleware that authenticates API keys, console sessions and organisation
// membership, and the publishers' reputation ledger. The events group needs the
// organisations too: the reputation rule writes in their audit log and e-mails their owners
// (docs/network.md §2).
package tenants

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"

	"github.com/roadevents/roadevents/shared/apikey"
	"github.com/roadevents/roadevents/shared/app/groupapi"
	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/consoleauth"
	"github.com/roadevents/roadevents/shared/httpapi"
	"github.com/roadevents/roadevents/shared/mail"
	"github.com/roadevents/roadevents/shared/metering"
	"github.com/roadevents/roadevents/shared/orgs"
	"github.com/roadevents/roadevents/shared/plans"
	"github.com/roadevents/roadevents/shared/reputation"
	"github.com/roadevents/roadevents/shared/routetable"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/webhooks"
)

// Deps is what a group on the table is built from. Base's Clock and Logger, Table, Keys and
// Meter are required; the others say what is used when they are empty.
type Deps struct {
	groupapi.Base
	Table store.Table
	// Keys authenticates the API keys of /v1.
	Keys *apikey.Keys
	// Meter counts usage (docs/api.md §1).
	Meter *metering.Meter
	// Mailer sends the console's e-mail; when nil sending fails (Mail), which New logs for a
	// console group it serves.
	Mailer mail.Mailer
	// Sealer encrypts TOTP secrets at rest; when nil AES-GCM under Config.Console.SealKey, or
	// under a random key, which New logs for the console-auth group.
	Sealer seal.Sealer
	// Turns carries webhook deliveries' turns (on AWS, SQS: OpenTurns); nil keeps them in the
	// table.
	Turns webhooks.Sender
	// PlanCaps gives the live-key and seat caps of a plan (orgs.Options.Caps); the caps of the
	// plans of Config.Billing (plans.Catalogue.Caps) when nil.
	PlanCaps func(planID string) (liveKeyCap, seatCap int)
}

// ErrNoMailer is what the mailer of Deps.Mail answers when Deps has none.
var ErrNoMailer = errors.New("tenants: no mailer configured (Deps.Mailer)")

type noMailer struct{}

// Send refuses every message.
func (noMailer) Send(context.Context, mail.Message) error { return ErrNoMailer }

// Mail returns d.Mailer, or a mailer refusing every message with ErrNoMailer when it is nil.
func (d Deps) Mail() mail.Mailer {
	if d.Mailer == nil {
		return noMailer{}
	}
	return d.Mailer
}

// Tenants are the console's identity and organisations, and the sealer of the secrets they
// keep (TOTP secrets, webhook signing secrets).
type Tenants struct {
	Auth   *consoleauth.Service
	Orgs   *orgs.Service
	Sealer seal.Sealer
}

// New builds the identity and the organisations on d for a process serving the groups served.
// Missing adapters are replaced, so that every group can be built; when a console group is
// served each replacement is logged, because it changes behaviour: without a mailer no code
// or invitation can be sent, and with a random key TOTP secrets and pending codes do not
// survive a restart.
func New(d Deps, served ...routetable.Group) (*Tenants, error) {
	t := &Tenants{}
	// The TOTP hook of consoleauth writes in the audit log of every organisation of the user
	// (docs/api.md §10.3), so the identity is built with a hook on the organisations, which are
	// built from the identity right after.
	onTOTP := func(ctx context.Context, u consoleauth.User, action string) {
		if t.Orgs != nil {
			t.Orgs.RecordUserAction(ctx, u, action)
		}
	}
	var err error
	console := slices.Contains(served, routetable.GroupConsoleAuth) || slices.Contains(served, routetable.GroupConsoleOrgs)
	t.Sealer = newSealer(d, console)
	if t.Auth, err = newAuth(d, t.Sealer, slices.Contains(served, routetable.GroupConsoleAuth), onTOTP); err != nil {
		return nil, err
	}
	if t.Orgs, err = newOrgs(d, t.Auth, slices.Contains(served, routetable.GroupConsoleOrgs)); err != nil {
		return nil, err
	}
	return t, nil
}

// Middleware authenticates the routes of the groups on the table, in order: API keys (and
// stream tickets on the routes taking them, when tickets is not nil), console session and
// temporary tokens, then the membership of /console/orgs/{org_id}/... routes, after the
// session and before validation, so that a non-member gets 404, never 422 (docs/api.md §4.3).
func (t *Tenants) Middleware(keys *apikey.Keys, tickets apikey.TicketVerifier) []httpapi.RouteMiddleware {
	return []httpapi.RouteMiddleware{
		apikey.Middleware(keys, apikey.MiddlewareOptions{Tickets: tickets}),
		consoleauth.Middleware(t.Auth),
		orgs.MembershipMiddleware(t.Orgs),
	}
}

// newSealer is d.Sealer, or AES-GCM under Config.Console.SealKey, or under a random key,
// which it logs when serving a console group.
func newSealer(d Deps, serving bool) seal.Sealer {
	if d.Sealer != nil {
		return d.Sealer
	}
	if len(d.Config.Console.SealKey) == seal.KeySize {
		sealer, _ := seal.NewAESGCM(d.Config.Console.SealKey)
		return sealer
	}
	key := make([]byte, seal.KeySize)
	rand.Read(key)
	sealer, _ := seal.NewAESGCM(key)
	if serving {
		d.Logger.Warn("no sealing key configured (ROADEVENTS_SEAL_KEY or ROADEVENTS_KMS_KEY_ID): using a random one, " +
			"so TOTP and webhook signing secrets cannot be read after this process restarts")
	}
	return sealer
}

func newAuth(d Deps, sealer seal.Sealer, serving bool, onTOTPChange func(context.Context, consoleauth.User, string)) (*consoleauth.Service, error) {
	warn := func(msg string) {
		if serving {
			d.Logger.Warn(msg)
		}
	}
	if d.Mailer == nil {
		warn("no mailer configured: console sign-in codes cannot be sent")
	}
	hashKey := d.Config.Console.HashKey
	if len(hashKey) < consoleauth.MinHashKeyBytes {
		hashKey = make([]byte, consoleauth.MinHashKeyBytes)
		rand.Read(hashKey)
		warn("no console hash key configured (ROADEVENTS_AUTH_HASH_KEY): using a random one, " +
			"so codes and recovery codes stop working when this process restarts")
	}
	s, err := consoleauth.New(d.Table, consoleauth.Options{
		Clock: d.Clock, Logger: d.Logger, Mailer: d.Mail(), Sealer: sealer, HashKey: hashKey,
		ConsoleURL: d.Config.ConsoleURL, OnTOTPChange: onTOTPChange,
	})
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	return s, nil
}

// newOrgs builds the organisations (group console-orgs) on the identity auth. Without a
// mailer, invitations are stored but their e-mails fail (logged).
func newOrgs(d Deps, auth *consoleauth.Service, serving bool) (*orgs.Service, error) {
	if d.Mailer == nil && serving {
		d.Logger.Warn("no mailer configured: invitations and key notices cannot be sent")
	}
	caps := d.PlanCaps
	if caps == nil {
		// The plans of the configuration decide the caps of the organisations (docs/api.md §10.3).
		caps = plans.New(d.Config.Billing).Caps
	}
	s, err := orgs.New(d.Table, orgs.Options{
		Clock: d.Clock, Logger: d.Logger, Mailer: d.Mail(), Keys: d.Keys, Users: auth, TOTP: auth,
		ConsoleURL: consoleAppURL(d.Config.ConsoleURL),
		Caps:       caps,
	})
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	return s, nil
}

// consoleAppURL is where the console's pages are, ending in "/": ConsoleURL when set (the
// console lives under /app/ because GET / is the API's JSON), "/app/" on the serving origin
// otherwise, so that an invitation link is at least a path of the same service.
func consoleAppURL(u string) string {
	if u == "" {
		return "/app/"
	}
	if u[len(u)-1] != '/' {
		u += "/"
	}
	return u
}

// NewLedger builds the publishers' reputation ledger (docs/network.md §2), which the events
// group keeps and the console-orgs group shows, on the configuration's rules; a Deps built in
// code without them gets config.DefaultReputation.
func NewLedger(d Deps) (*reputation.Ledger, error) {
	rules := d.Config.Reputation
	if rules == (config.Reputation{}) {
		rules = config.DefaultReputation
	}
	l, err := reputation.New(d.Table, reputation.Options{Clock: d.Clock, Rules: rules})
	if err != nil {
		return nil, fmt.Errorf("tenants: %w", err)
	}
	return l, nil
}

// NewEndpoints returns the organisations' webhook endpoints, their secrets sealed with t's
// sealer and their changes in the audit log (docs/webhooks.md §4).
func NewEndpoints(d Deps, t *Tenants) *webhooks.Endpoints {
	return webhooks.NewEndpoints(d.Table, t.Orgs.Audit(), t.Sealer,
		webhooks.EndpointsOptions{Clock: d.Clock, PlainHTTP: d.Config.Webhooks.AllowPrivate})
}

// NewDeliveries returns the webhook deliveries' queue, its turns carried by d.Turns (in the
// table when nil; docs/webhooks.md §3).
func NewDeliveries(d Deps) *webhooks.Queue {
	return webhooks.NewQueueSending(d.Table, d.Clock, d.Turns)
}

// Delivering tells whether webhook deliveries run where d is deployed: in the process of the
// embedded store, or on AWS with the turns' queue (docs/webhooks.md).
func Delivering(d Deps) bool {
	return d.Config.Store == config.StoreEmbedded || d.Config.Webhooks.QueueURL != ""
}
