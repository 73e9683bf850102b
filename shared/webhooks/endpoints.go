package webhooks

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/netguard"
	"github.com/roadevents/roadevents/shared/seal"
	"github.com/roadevents/roadevents/shared/store"
)

// The kinds of delivery an endpoint subscribes to (docs/webhooks.md §1): what happened to one
// of the organisation's own events.
const (
	KindConfirmed = "event.confirmed"
	KindDenied    = "event.denied"
	KindMerged    = "event.merged"
	KindEnded     = "event.ended"
	KindExpired   = "event.expired"
)

// The kinds of delivery of the organisation's alert rules (docs/webhooks.md §5): any network
// event that comes to match a rule, changes while it matches, or stops matching.
const (
	KindAlertCreated = "alert.created"
	KindAlertUpdated = "alert.updated"
	KindAlertEnded   = "alert.ended"
)

// Kinds are the kinds an endpoint may subscribe to, in the order the documents list them.
var Kinds = []string{KindConfirmed, KindDenied, KindMerged, KindEnded, KindExpired, KindAlertCreated, KindAlertUpdated, KindAlertEnded}

// Endpoint limits and rules (docs/webhooks.md §4).
const (
	MaxEndpointsPerOrg = 10
	MaxURLLen          = 2048
	MaxDescriptionLen  = 200
	// RotationOverlap is how long the previous secret still signs after a rotation.
	RotationOverlap = 24 * time.Hour
)

// Audit actions of endpoints (docs/api.md §10.3).
const (
	ActionEndpointCreated = "webhook.created"
	ActionEndpointUpdated = "webhook.updated"
	ActionEndpointRotated = "webhook.secret_rotated"
	ActionEndpointDeleted = "webhook.deleted"
)

// Errors of the endpoints. Check them with errors.Is.
var (
	ErrNotFound = errors.New("webhooks: endpoint not found in this organisation")
	ErrInvalid  = errors.New("webhooks: invalid endpoint")
	ErrCap      = errors.New("webhooks: the organisation has as many endpoints as it may")
	ErrBusy     = errors.New("webhooks: the endpoint changed while this request ran")
)

// Endpoint is a receiver an organisation registered (docs/webhooks.md §4). Its secrets are
// never in it: Secrets opens them for the dispatcher.
type Endpoint struct {
	ID, Org     string
	URL         string
	Description string
	Kinds       []string
	Enabled     bool
	// DisabledReason says why the service disabled it (a 410 from the receiver); empty when
	// an owner did, or when it is enabled.
	DisabledReason string
	CreatedAt      time.Time
	CreatedByEmail string
	UpdatedAt      time.Time
	// RotatedAt is the last rotation; the previous secret signs until PreviousUntil.
	RotatedAt, PreviousUntil time.Time
	rev                      int64
}

// EndpointDraft is what an owner sends to register an endpoint or change one; nil fields are
// left as they are (on registration, URL and Kinds are required).
type EndpointDraft struct {
	URL, Description *string
	Kinds            []string
	Enabled          *bool
}

// Actor is who changes an endpoint, for the audit log.
type Actor struct {
	UserID, Email string
}

// Endpoints keeps the organisations' webhook endpoints.
//
// # Storage layout
//
//	pk "org#<org_id>"  sk "webhook#<endpoint_id>"  the endpoint, its sealed secrets
//	pk "org#<org_id>"  sk "webhooks#count"         how many endpoints the organisation has
//
// An endpoint lives in its organisation's partition (docs/architecture.md §2): the console
// lists them by prefix, and the dispatcher reads one by key. Secrets are sealed (AES-GCM
// locally, KMS on AWS) bound to the organisation and the endpoint, never hashed: the service
// must sign with them.
type Endpoints struct {
	table     store.Table
	audit     *audit.Log
	sealer    seal.Sealer
	clock     clock.Clock
	plainHTTP bool
	opened    openedSecrets
}

// openedSecrets keeps the secrets a dispatcher opened, by their sealed form: on AWS opening is
// a KMS call, and a burst of deliveries to one endpoint would make one per attempt. A sealed
// secret is never sealed alike twice (a fresh nonce, or KMS's own), so a rotation misses.
type openedSecrets struct {
	mu sync.Mutex
	m  map[string]string
}

// maxOpened bounds the secrets kept; past it they are all dropped and opened again.
const maxOpened = 1024

func (o *openedSecrets) open(ctx context.Context, s seal.Sealer, sealed []byte, sealCtx string) (string, error) {
	key := sealCtx + "\x00" + string(sealed)
	o.mu.Lock()
	plain, ok := o.m[key]
	o.mu.Unlock()
	if ok {
		return plain, nil
	}
	b, err := s.Open(ctx, sealed, sealCtx)
	if err != nil {
		return "", err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m) >= maxOpened {
		o.m = map[string]string{}
	}
	o.m[key] = string(b)
	return string(b), nil
}

// EndpointsOptions configure Endpoints.
type EndpointsOptions struct {
	Clock clock.Clock
	// PlainHTTP accepts http URLs besides https: for a deployment that lets endpoints live
	// inside its own network (ROADEVENTS_WEBHOOKS_ALLOW_PRIVATE), such as a receiver on
	// loopback beside go run ..
	PlainHTTP bool
}

// NewEndpoints returns the endpoints on table, sealing secrets with sealer and writing changes
// to log.
func NewEndpoints(table store.Table, log *audit.Log, sealer seal.Sealer, o EndpointsOptions) *Endpoints {
	if o.Clock == nil {
		o.Clock = clock.System
	}
	return &Endpoints{table: table, audit: log, sealer: sealer, clock: o.Clock, plainHTTP: o.PlainHTTP}
}

const (
	pkOrg          = "org#"
	skEndpoint     = "webhook#"
	skEndpointsCnt = "webhooks#count"
)

const (
	attrEndpointID, attrOrg, attrURL, attrDescription, attrKinds  = "endpoint_id", "org_id", "url", "description", "kinds"
	attrEnabled, attrDisabledReason, attrCreatedAt, attrCreatedBy = "enabled", "disabled_reason", "created_at", "created_by_email"
	attrUpdatedAt, attrRotatedAt, attrPreviousUntil, attrRev      = "updated_at", "rotated_at", "previous_until", "rev"
	attrSecret, attrPrevious, attrCount                           = "secret", "previous_secret", "endpoints"
)

func endpointKey(org, id string) store.Key { return store.Key{PK: pkOrg + org, SK: skEndpoint + id} }
func countKey(org string) store.Key        { return store.Key{PK: pkOrg + org, SK: skEndpointsCnt} }

var validEndpointID = regexp.MustCompile(`^wh_[a-z2-7]{16}$`).MatchString

func sealContext(org, id string) string { return "webhook-secret:" + org + ":" + id }

// Create registers an endpoint of org and returns it with its signing secret, which is shown
// this once.
func (e *Endpoints) Create(ctx context.Context, org string, a Actor, d EndpointDraft) (Endpoint, string, error) {
	if d.URL == nil || d.Kinds == nil {
		return Endpoint{}, "", fmt.Errorf("%w: url and kinds are required", ErrInvalid)
	}
	now := e.clock.Now().UTC()
	ep := Endpoint{ID: "wh_" + strings.ToLower(rand.Text()[:16]), Org: org, Enabled: true,
		CreatedAt: now, CreatedByEmail: a.Email, UpdatedAt: now}
	if err := ep.apply(d, e.plainHTTP); err != nil {
		return Endpoint{}, "", err
	}
	secret := NewSecret()
	sealed, err := e.sealer.Seal(ctx, []byte(secret), sealContext(org, ep.ID))
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("webhooks: seal the secret of %s: %w", ep.ID, err)
	}
	op, _, err := e.audit.PutOp(org, ActionEndpointCreated, a.UserID, a.Email, ep.ID, ep.auditDetail())
	if err != nil {
		return Endpoint{}, "", err
	}
	it := ep.item()
	it[attrSecret] = sealed
	err = e.table.TransactWrite(ctx, []store.Op{
		store.CountUpOp(countKey(org), attrCount, MaxEndpointsPerOrg),
		store.PutOp(it, store.IfNotExists()),
		op,
	})
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && ce.Op == 0:
		return Endpoint{}, "", fmt.Errorf("%w (%d)", ErrCap, MaxEndpointsPerOrg)
	case errors.Is(err, store.ErrConflict):
		return Endpoint{}, "", fmt.Errorf("%w: a registration of %s at the same moment", ErrBusy, org)
	case err != nil:
		return Endpoint{}, "", fmt.Errorf("webhooks: register an endpoint of %s: %w", org, err)
	}
	return ep, secret, nil
}

// List returns org's endpoints, oldest first.
func (e *Endpoints) List(ctx context.Context, org string) ([]Endpoint, error) {
	items, err := e.table.Query(ctx, store.Query{PK: pkOrg + org, Prefix: skEndpoint})
	if err != nil {
		return nil, fmt.Errorf("webhooks: list the endpoints of %s: %w", org, err)
	}
	out := make([]Endpoint, 0, len(items))
	for _, it := range items {
		out = append(out, endpointFrom(it))
	}
	slices.SortStableFunc(out, func(a, b Endpoint) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// Get returns org's endpoint id; ErrNotFound when it is not org's.
func (e *Endpoints) Get(ctx context.Context, org, id string) (Endpoint, error) {
	it, err := e.item(ctx, org, id)
	if err != nil {
		return Endpoint{}, err
	}
	return endpointFrom(it), nil
}

func (e *Endpoints) item(ctx context.Context, org, id string) (store.Item, error) {
	if !validEndpointID(id) {
		return nil, fmt.Errorf("%w: a malformed id", ErrNotFound)
	}
	it, err := e.table.Get(ctx, endpointKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: read endpoint %s: %w", id, err)
	}
	return it, nil
}

// Update changes org's endpoint id as d says and writes the change to the audit log.
// Enabling an endpoint the service disabled clears the reason.
func (e *Endpoints) Update(ctx context.Context, org, id string, a Actor, d EndpointDraft) (Endpoint, error) {
	ep, err := e.Get(ctx, org, id)
	if err != nil {
		return Endpoint{}, err
	}
	before := ep
	if err := ep.apply(d, e.plainHTTP); err != nil {
		return Endpoint{}, err
	}
	changed := ep.changes(before)
	if len(changed) == 0 {
		return ep, nil
	}
	if ep.Enabled {
		ep.DisabledReason = ""
	}
	ep.UpdatedAt = e.clock.Now().UTC()
	detail := ep.auditDetail()
	detail["changed"] = changed
	op, _, err := e.audit.PutOp(org, ActionEndpointUpdated, a.UserID, a.Email, id, detail)
	if err != nil {
		return Endpoint{}, err
	}
	return ep, e.write(ctx, before, []store.Op{op}, map[string]any{
		attrURL: ep.URL, attrDescription: ep.Description, attrKinds: ep.Kinds, attrEnabled: ep.Enabled,
		attrDisabledReason: ep.DisabledReason, attrUpdatedAt: store.FormatTime(ep.UpdatedAt),
	})
}

// Rotate gives org's endpoint id a new secret, returned this once; the previous one still
// signs for RotationOverlap, so that the receiver can change over without refusing a delivery.
func (e *Endpoints) Rotate(ctx context.Context, org, id string, a Actor) (Endpoint, string, error) {
	it, err := e.item(ctx, org, id)
	if err != nil {
		return Endpoint{}, "", err
	}
	ep := endpointFrom(it)
	secret := NewSecret()
	sealed, err := e.sealer.Seal(ctx, []byte(secret), sealContext(org, id))
	if err != nil {
		return Endpoint{}, "", fmt.Errorf("webhooks: seal the secret of %s: %w", id, err)
	}
	now := e.clock.Now().UTC()
	before := ep
	ep.RotatedAt, ep.PreviousUntil, ep.UpdatedAt = now, now.Add(RotationOverlap), now
	op, _, err := e.audit.PutOp(org, ActionEndpointRotated, a.UserID, a.Email, id, ep.auditDetail())
	if err != nil {
		return Endpoint{}, "", err
	}
	err = e.write(ctx, before, []store.Op{op}, map[string]any{
		attrSecret: sealed, attrPrevious: it.Bytes(attrSecret), attrRotatedAt: store.FormatTime(now),
		attrPreviousUntil: store.FormatTime(ep.PreviousUntil), attrUpdatedAt: store.FormatTime(now),
	})
	return ep, secret, err
}

// Delete removes org's endpoint id; its pending deliveries are dropped when their turn comes.
func (e *Endpoints) Delete(ctx context.Context, org, id string, a Actor) error {
	ep, err := e.Get(ctx, org, id)
	if err != nil {
		return err
	}
	op, _, err := e.audit.PutOp(org, ActionEndpointDeleted, a.UserID, a.Email, id, ep.auditDetail())
	if err != nil {
		return err
	}
	err = e.table.TransactWrite(ctx, []store.Op{
		store.DeleteOp(endpointKey(org, id), store.IfExists()),
		store.CountDownOp(countKey(org), attrCount),
		op,
	})
	if errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("webhooks: delete endpoint %s: %w", id, err)
	}
	return nil
}

// Disable turns org's endpoint id off on the receiver's word (a 410), saying why.
func (e *Endpoints) Disable(ctx context.Context, org, id, reason string) error {
	_, err := e.table.Update(ctx, endpointKey(org, id), store.Update{
		Set: map[string]any{attrEnabled: false, attrDisabledReason: reason, attrUpdatedAt: store.FormatTime(e.clock.Now())},
		Add: map[string]int64{attrRev: 1},
	}, store.IfExists())
	if err != nil && !errors.Is(err, store.ErrConditionFailed) {
		return fmt.Errorf("webhooks: disable endpoint %s: %w", id, err)
	}
	return nil
}

// Secrets returns the endpoint and the secrets that sign its deliveries at now: the current
// one, and the previous one while the rotation overlap lasts.
func (e *Endpoints) Secrets(ctx context.Context, org, id string) (Endpoint, []string, error) {
	it, err := e.item(ctx, org, id)
	if err != nil {
		return Endpoint{}, nil, err
	}
	ep := endpointFrom(it)
	var out []string
	for _, attr := range []string{attrSecret, attrPrevious} {
		sealed := it.Bytes(attr)
		if sealed == nil || attr == attrPrevious && !e.clock.Now().Before(ep.PreviousUntil) {
			continue
		}
		s, err := e.opened.open(ctx, e.sealer, sealed, sealContext(org, id))
		if err != nil {
			return Endpoint{}, nil, fmt.Errorf("webhooks: open the secret of %s: %w", id, err)
		}
		out = append(out, s)
	}
	return ep, out, nil
}

// write applies set to the endpoint as before read it, with ops, on condition that it did
// not change meanwhile.
func (e *Endpoints) write(ctx context.Context, before Endpoint, ops []store.Op, set map[string]any) error {
	err := e.table.TransactWrite(ctx, append([]store.Op{
		store.UpdateOp(endpointKey(before.Org, before.ID), store.Update{Set: set, Add: map[string]int64{attrRev: 1}},
			store.IfEqual(attrRev, before.rev)),
	}, ops...))
	if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("%w: %s", ErrBusy, before.ID)
	}
	if err != nil {
		return fmt.Errorf("webhooks: change endpoint %s: %w", before.ID, err)
	}
	return nil
}

// apply writes d's fields into ep, checking each (docs/webhooks.md §4).
func (ep *Endpoint) apply(d EndpointDraft, plainHTTP bool) error {
	if d.URL != nil {
		if err := CheckURL(*d.URL, plainHTTP); err != nil {
			return err
		}
		ep.URL = *d.URL
	}
	if d.Description != nil {
		if n := utf8.RuneCountInString(*d.Description); n > MaxDescriptionLen {
			return fmt.Errorf("%w: a description of %d characters", ErrInvalid, n)
		}
		ep.Description = *d.Description
	}
	if d.Kinds != nil {
		kinds := slices.Clone(d.Kinds)
		slices.Sort(kinds)
		kinds = slices.Compact(kinds)
		for _, k := range kinds {
			if !slices.Contains(Kinds, k) {
				return fmt.Errorf("%w: kind %q", ErrInvalid, k)
			}
		}
		if len(kinds) == 0 {
			return fmt.Errorf("%w: no kind", ErrInvalid)
		}
		ep.Kinds = kinds
	}
	if d.Enabled != nil {
		ep.Enabled = *d.Enabled
	}
	return nil
}

// CheckURL refuses an endpoint URL the dispatcher would not send to: not absolute https (or
// http, with plainHTTP), with credentials, or too long (netguard.CheckURL).
func CheckURL(raw string, plainHTTP bool) error {
	schemes := []string{"https"}
	if plainHTTP {
		schemes = append(schemes, "http")
	}
	if err := netguard.CheckURL(raw, MaxURLLen, schemes...); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// changes names what ep changed from before.
func (ep Endpoint) changes(before Endpoint) []string {
	var out []string
	if ep.URL != before.URL {
		out = append(out, "url")
	}
	if ep.Description != before.Description {
		out = append(out, "description")
	}
	if !slices.Equal(ep.Kinds, before.Kinds) {
		out = append(out, "kinds")
	}
	if ep.Enabled != before.Enabled {
		out = append(out, "enabled")
	}
	return out
}

// auditDetail names the endpoint without its query, which may hold a token, and never a
// secret.
func (ep Endpoint) auditDetail() map[string]any {
	return map[string]any{"address": netguard.Address(ep.URL), "kinds": ep.Kinds, "enabled": ep.Enabled}
}

func (ep Endpoint) item() store.Item {
	return store.Item{
		store.AttrPK: pkOrg + ep.Org, store.AttrSK: skEndpoint + ep.ID,
		attrEndpointID: ep.ID, attrOrg: ep.Org, attrURL: ep.URL, attrDescription: ep.Description, attrKinds: ep.Kinds,
		attrEnabled: ep.Enabled, attrDisabledReason: ep.DisabledReason, attrCreatedAt: store.FormatTime(ep.CreatedAt),
		attrCreatedBy: ep.CreatedByEmail, attrUpdatedAt: store.FormatTime(ep.UpdatedAt), attrRev: ep.rev,
	}
}

func endpointFrom(it store.Item) Endpoint {
	return Endpoint{
		ID: it.String(attrEndpointID), Org: it.String(attrOrg), URL: it.String(attrURL), Description: it.String(attrDescription),
		Kinds: it.Strings(attrKinds), Enabled: it.Bool(attrEnabled), DisabledReason: it.String(attrDisabledReason),
		CreatedAt: it.Time(attrCreatedAt), CreatedByEmail: it.String(attrCreatedBy), UpdatedAt: it.Time(attrUpdatedAt),
		RotatedAt: it.Time(attrRotatedAt), PreviousUntil: it.Time(attrPreviousUntil), rev: it.Int(attrRev),
	}
}

// ForgetAddress removes an erased person's address from the endpoints of org they added
// (created_by_email; docs/privacy.md §6).
func (e *Endpoints) ForgetAddress(ctx context.Context, org, email string) error {
	return store.ForgetValue(ctx, e.table, store.Query{PK: pkOrg + org, Prefix: skEndpoint}, email, nil)
}
