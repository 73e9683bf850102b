// Package alerts holds the organisations' alert rules (docs/webhooks.md §5): a named area (a
// circle, or a polygon of up to 256 points), an environment, types and a minimum confidence.
// Any network event that comes to match a rule is announced to the rule's organisation as
// alert.created, its changes while it matches as alert.updated, and its leaving as
// alert.ended; package webhookfeed makes those deliveries from the table's change feed, with
// an Index of every rule.
package alerts

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/clock"
	"github.com/roadevents/roadevents/shared/event"
	"github.com/roadevents/roadevents/shared/geo"
	"github.com/roadevents/roadevents/shared/store"
	"github.com/roadevents/roadevents/shared/taxonomy"
)

// Rule limits (docs/webhooks.md §5).
const (
	MaxPerOrg  = 50
	MaxNameLen = 100
)

// Audit actions of the rules (docs/api.md §10.3).
const (
	ActionRuleCreated = "alert_rule.created"
	ActionRuleUpdated = "alert_rule.updated"
	ActionRuleDeleted = "alert_rule.deleted"
)

// Errors of the rules. Check them with errors.Is; an *InvalidError is also ErrInvalid.
var (
	ErrNotFound = errors.New("alerts: rule not found in this organisation")
	ErrInvalid  = errors.New("alerts: invalid rule")
	ErrCap      = errors.New("alerts: the organisation has as many rules as it may")
	ErrBusy     = errors.New("alerts: the rule changed while this request ran")
)

// InvalidError is a rule refused at the field at fault: Field is its path in the rule as the
// console routes write it ("area", "coordinates", 0, 5).
type InvalidError struct {
	Field []any
	Msg   string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("alerts: invalid rule: %v: %s", e.Field, e.Msg)
}

func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Rule is an organisation's alert rule.
type Rule struct {
	ID, Org, Name, Environment string
	Area                       Area
	// Types are the event types the rule hears; empty for every type.
	Types          []string
	MinConfidence  float64
	Enabled        bool
	CreatedAt      time.Time
	CreatedByEmail string
	UpdatedAt      time.Time
	rev            int64
}

// Matches reports whether ev is one the rule announces: active, visible in the rule's
// environment (a sandbox rule hears live and sandbox events, as a sandbox key reads them:
// docs/api.md §1), of one of its types, at least as trusted as its minimum, and touching its
// area. Expiry is not looked at: the caller knows when an event expired.
func (r Rule) Matches(ev event.Event) bool {
	env := ev.Environment
	if env == "" {
		env = event.EnvironmentLive
	}
	return r.Enabled && ev.Status == event.StatusActive &&
		(r.Environment == event.EnvironmentSandbox || env == event.EnvironmentLive) &&
		(len(r.Types) == 0 || slices.Contains(r.Types, ev.Type)) &&
		event.Confidence(ev.ConfirmCount, ev.DenyCount) >= r.MinConfidence &&
		r.Area.Touches(ev.Extent())
}

// Draft is what an owner sends to make a rule or to change one; nil fields are left as they
// are (on creation, Name, Environment and Area are required).
type Draft struct {
	Name, Environment *string
	Area              *Area
	// Types replaces the types when not nil; an empty list is every type.
	Types         *[]string
	MinConfidence *float64
	Enabled       *bool
}

// Actor is who changes a rule, for the audit log.
type Actor struct {
	UserID, Email string
}

// Rules keeps every organisation's alert rules.
//
// # Storage layout
//
//	pk "alertrule#registry"  sk "rule#<org_id>#<rule_id>"  the rule
//	pk "alertrule#registry"  sk "count#<org_id>"           how many rules the organisation has
//
// One partition holds every rule, so that the producer of deliveries reads them all with one
// query (docs/architecture.md §2); an organisation lists its own by prefix.
type Rules struct {
	table store.Table
	audit *audit.Log
	clock clock.Clock
}

// NewRules returns the rules on table, writing their changes to log.
func NewRules(table store.Table, log *audit.Log, c clock.Clock) *Rules {
	if c == nil {
		c = clock.System
	}
	return &Rules{table: table, audit: log, clock: c}
}

// Partition is the rules' partition: a change of an item in it is a change of the rules.
const Partition = "alertrule#registry"

const (
	skRule  = "rule#"
	skCount = "count#"
)

const (
	attrRuleID, attrOrg, attrName, attrEnv, attrArea, attrTypes = "rule_id", "org_id", "name", "environment", "area", "types"
	attrMinConf, attrEnabled, attrCreatedAt, attrCreatedBy      = "min_confidence", "enabled", "created_at", "created_by_email"
	attrUpdatedAt, attrRev, attrCount                           = "updated_at", "rev", "rules"
)

func ruleKey(org, id string) store.Key { return store.Key{PK: Partition, SK: skRule + org + "#" + id} }
func countKey(org string) store.Key    { return store.Key{PK: Partition, SK: skCount + org} }

// validID tells whether id has the shape of a rule id, so that a malformed one is not found
// without a read.
var validID = regexp.MustCompile(`^ar_[a-z2-7]{16}$`).MatchString

// Create makes a rule of org from d and writes it to the audit log.
func (r *Rules) Create(ctx context.Context, org string, a Actor, d Draft) (Rule, error) {
	switch {
	case d.Name == nil:
		return Rule{}, &InvalidError{[]any{"name"}, "required"}
	case d.Environment == nil:
		return Rule{}, &InvalidError{[]any{"environment"}, "required"}
	case d.Area == nil:
		return Rule{}, &InvalidError{[]any{"area"}, "required"}
	}
	now := r.clock.Now().UTC()
	rule := Rule{ID: "ar_" + strings.ToLower(rand.Text()[:16]), Org: org, Enabled: true, CreatedAt: now, CreatedByEmail: a.Email, UpdatedAt: now}
	if err := rule.apply(d); err != nil {
		return Rule{}, err
	}
	it, err := rule.item()
	if err != nil {
		return Rule{}, err
	}
	op, _, err := r.audit.PutOp(org, ActionRuleCreated, a.UserID, a.Email, rule.ID, rule.auditDetail())
	if err != nil {
		return Rule{}, err
	}
	// The count goes up in the same transaction, on condition that it is below the cap.
	err = r.table.TransactWrite(ctx, []store.Op{
		store.CountUpOp(countKey(org), attrCount, MaxPerOrg),
		store.PutOp(it, store.IfNotExists()),
		op,
	})
	var ce *store.ConditionError
	switch {
	case errors.As(err, &ce) && ce.Op == 0:
		return Rule{}, fmt.Errorf("%w (%d)", ErrCap, MaxPerOrg)
	case errors.Is(err, store.ErrConflict):
		return Rule{}, fmt.Errorf("%w: a rule of %s made at the same moment", ErrBusy, org)
	case err != nil:
		return Rule{}, fmt.Errorf("alerts: make a rule of %s: %w", org, err)
	}
	return rule, nil
}

// List returns org's rules, oldest first.
func (r *Rules) List(ctx context.Context, org string) ([]Rule, error) {
	return r.query(ctx, skRule+org+"#")
}

// All returns every organisation's rules, for an Index.
func (r *Rules) All(ctx context.Context) ([]Rule, error) { return r.query(ctx, skRule) }

func (r *Rules) query(ctx context.Context, prefix string) ([]Rule, error) {
	items, err := r.table.Query(ctx, store.Query{PK: Partition, Prefix: prefix})
	if err != nil {
		return nil, fmt.Errorf("alerts: list rules: %w", err)
	}
	out := make([]Rule, 0, len(items))
	for _, it := range items {
		rule, err := ruleFrom(it)
		if err != nil {
			return nil, err
		}
		out = append(out, rule)
	}
	slices.SortStableFunc(out, func(a, b Rule) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// Get returns org's rule id; ErrNotFound when it is not org's.
func (r *Rules) Get(ctx context.Context, org, id string) (Rule, error) {
	if !validID(id) {
		return Rule{}, fmt.Errorf("%w: a malformed id", ErrNotFound)
	}
	it, err := r.table.Get(ctx, ruleKey(org, id))
	if errors.Is(err, store.ErrNotFound) {
		return Rule{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return Rule{}, fmt.Errorf("alerts: read rule %s: %w", id, err)
	}
	return ruleFrom(it)
}

// Update changes org's rule id as d says and writes the change to the audit log.
func (r *Rules) Update(ctx context.Context, org, id string, a Actor, d Draft) (Rule, error) {
	rule, err := r.Get(ctx, org, id)
	if err != nil {
		return Rule{}, err
	}
	before := rule
	if err := rule.apply(d); err != nil {
		return Rule{}, err
	}
	changed := rule.changes(before)
	if len(changed) == 0 {
		return rule, nil
	}
	rule.UpdatedAt = r.clock.Now().UTC()
	it, err := rule.item()
	if err != nil {
		return Rule{}, err
	}
	it[attrRev] = before.rev + 1
	detail := rule.auditDetail()
	detail["changed"] = changed
	op, _, err := r.audit.PutOp(org, ActionRuleUpdated, a.UserID, a.Email, rule.ID, detail)
	if err != nil {
		return Rule{}, err
	}
	err = r.table.TransactWrite(ctx, []store.Op{store.PutOp(it, store.IfEqual(attrRev, before.rev)), op})
	if errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrConflict) {
		return Rule{}, fmt.Errorf("%w: %s", ErrBusy, id)
	}
	if err != nil {
		return Rule{}, fmt.Errorf("alerts: change rule %s: %w", id, err)
	}
	rule.rev++
	return rule, nil
}

// Delete removes org's rule id and writes it to the audit log.
func (r *Rules) Delete(ctx context.Context, org, id string, a Actor) error {
	rule, err := r.Get(ctx, org, id)
	if err != nil {
		return err
	}
	op, _, err := r.audit.PutOp(org, ActionRuleDeleted, a.UserID, a.Email, rule.ID, rule.auditDetail())
	if err != nil {
		return err
	}
	err = r.table.TransactWrite(ctx, []store.Op{
		store.DeleteOp(ruleKey(org, id), store.IfExists()),
		store.CountDownOp(countKey(org), attrCount),
		op,
	})
	var ce *store.ConditionError
	if errors.As(err, &ce) && ce.Op == 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("alerts: delete rule %s: %w", id, err)
	}
	return nil
}

// apply writes d's fields into rule, checking each (docs/webhooks.md §5).
func (rule *Rule) apply(d Draft) error {
	if d.Name != nil {
		if n := utf8.RuneCountInString(strings.TrimSpace(*d.Name)); n == 0 || n > MaxNameLen {
			return &InvalidError{[]any{"name"}, fmt.Sprintf("a name of 1 to %d characters", MaxNameLen)}
		}
		rule.Name = strings.TrimSpace(*d.Name)
	}
	if d.Environment != nil {
		if *d.Environment != event.EnvironmentLive && *d.Environment != event.EnvironmentSandbox {
			return &InvalidError{[]any{"environment"}, "live or sandbox"}
		}
		rule.Environment = *d.Environment
	}
	if d.Area != nil {
		if p := d.Area.Check(); p != nil {
			field := []any{"area"}
			if p.Index >= 0 {
				field = append(field, "coordinates", 0, p.Index)
			}
			return &InvalidError{field, p.Msg}
		}
		rule.Area = *d.Area
	}
	if d.Types != nil {
		types := []string{}
		for i, t := range *d.Types {
			if !taxonomy.Known(t) {
				return &InvalidError{[]any{"types", i}, fmt.Sprintf("unknown type %q", t)}
			}
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
		rule.Types = types
	}
	if d.MinConfidence != nil {
		if c := *d.MinConfidence; !(c >= 0 && c <= 1) {
			return &InvalidError{[]any{"min_confidence"}, "a confidence from 0 to 1"}
		}
		rule.MinConfidence = *d.MinConfidence
	}
	if d.Enabled != nil {
		rule.Enabled = *d.Enabled
	}
	return nil
}

// changes names the settings rule changed from before.
func (rule Rule) changes(before Rule) []string {
	var out []string
	add := func(name string, differs bool) {
		if differs {
			out = append(out, name)
		}
	}
	add("name", rule.Name != before.Name)
	add("environment", rule.Environment != before.Environment)
	add("area", !rule.Area.equal(before.Area))
	add("types", !slices.Equal(rule.Types, before.Types))
	add("min_confidence", rule.MinConfidence != before.MinConfidence)
	add("enabled", rule.Enabled != before.Enabled)
	return out
}

func (a Area) equal(b Area) bool {
	if (a.Circle == nil) != (b.Circle == nil) {
		return false
	}
	if a.Circle != nil {
		return *a.Circle == *b.Circle
	}
	return slices.Equal(a.Polygon, b.Polygon)
}

func (rule Rule) auditDetail() map[string]any {
	kind := "polygon"
	if rule.Area.Circle != nil {
		kind = "circle"
	}
	return map[string]any{"name": rule.Name, "environment": rule.Environment, "area": kind}
}

// storedArea is an area as an item holds it: a circle, or a ring of [lon, lat] positions.
type storedArea struct {
	Lat     float64      `json:"lat,omitempty"`
	Lon     float64      `json:"lon,omitempty"`
	RadiusM float64      `json:"radius_m,omitempty"`
	Ring    [][2]float64 `json:"ring,omitempty"`
}

func (rule Rule) item() (store.Item, error) {
	var sa storedArea
	if c := rule.Area.Circle; c != nil {
		sa = storedArea{Lat: c.Center.Lat, Lon: c.Center.Lon, RadiusM: c.RadiusM}
	}
	for _, p := range rule.Area.Polygon {
		sa.Ring = append(sa.Ring, [2]float64{p.Lon, p.Lat})
	}
	area, err := json.Marshal(sa)
	if err != nil {
		return nil, err
	}
	k := ruleKey(rule.Org, rule.ID)
	it := store.Item{
		store.AttrPK: k.PK, store.AttrSK: k.SK, attrRuleID: rule.ID, attrOrg: rule.Org, attrName: rule.Name,
		attrEnv: rule.Environment, attrArea: string(area), attrMinConf: rule.MinConfidence, attrEnabled: rule.Enabled,
		attrCreatedAt: store.FormatTime(rule.CreatedAt), attrCreatedBy: rule.CreatedByEmail,
		attrUpdatedAt: store.FormatTime(rule.UpdatedAt), attrRev: rule.rev,
	}
	if len(rule.Types) > 0 { // a store holds no empty list: none is every type
		it[attrTypes] = append([]string{}, rule.Types...)
	}
	return it, nil
}

// Decode returns the rule an item of Partition holds; false for its other items (the counts).
func Decode(it store.Item) (Rule, bool, error) {
	if !strings.HasPrefix(it.Key().SK, skRule) {
		return Rule{}, false, nil
	}
	rule, err := ruleFrom(it)
	return rule, err == nil, err
}

func ruleFrom(it store.Item) (Rule, error) {
	rule := Rule{
		ID: it.String(attrRuleID), Org: it.String(attrOrg), Name: it.String(attrName), Environment: it.String(attrEnv),
		Types: it.Strings(attrTypes), MinConfidence: it.Float(attrMinConf), Enabled: it.Bool(attrEnabled),
		CreatedAt: it.Time(attrCreatedAt), CreatedByEmail: it.String(attrCreatedBy), UpdatedAt: it.Time(attrUpdatedAt),
		rev: it.Int(attrRev),
	}
	if rule.Types == nil {
		rule.Types = []string{}
	}
	var sa storedArea
	if err := json.Unmarshal([]byte(it.String(attrArea)), &sa); err != nil {
		return Rule{}, fmt.Errorf("alerts: rule %s: area: %w", rule.ID, err)
	}
	if len(sa.Ring) == 0 {
		rule.Area.Circle = &Circle{Center: geo.Point{Lat: sa.Lat, Lon: sa.Lon}, RadiusM: sa.RadiusM}
	}
	for _, p := range sa.Ring {
		rule.Area.Polygon = append(rule.Area.Polygon, geo.Point{Lat: p[1], Lon: p[0]})
	}
	return rule, nil
}

// Index finds the rules an event matches among many: each rule's area has a box, filed under
// the cells of a grid of gridDegrees its box covers, so that an event is checked in full
// against the rules of its own cells only; a rule whose box covers more than maxCells cells (a
// region) is kept apart and checked by its box.
type Index struct {
	rules []indexed
	grid  map[[2]int32][]int32
	wide  []int32
}

type indexed struct {
	Rule
	box bounds
}

// The grid: cells of a quarter of a degree (about 28 km north to south).
const (
	gridDegrees = 0.25
	maxCells    = 256
)

func cellOf(lat, lon float64) [2]int32 {
	return [2]int32{int32(math.Floor(lat / gridDegrees)), int32(math.Floor(lon / gridDegrees))}
}

// NewIndex returns an index of rules; disabled ones are left out.
func NewIndex(rules []Rule) *Index {
	x := &Index{grid: map[[2]int32][]int32{}}
	for _, r := range rules {
		if !r.Enabled {
			continue
		}
		i := int32(len(x.rules))
		b := r.Area.box()
		x.rules = append(x.rules, indexed{r, b})
		lo, hi := cellOf(b.minLat, b.minLon), cellOf(b.maxLat, b.maxLon)
		if int(hi[0]-lo[0]+1)*int(hi[1]-lo[1]+1) > maxCells {
			x.wide = append(x.wide, i)
			continue
		}
		for a := lo[0]; a <= hi[0]; a++ {
			for o := lo[1]; o <= hi[1]; o++ {
				x.grid[[2]int32{a, o}] = append(x.grid[[2]int32{a, o}], i)
			}
		}
	}
	return x
}

// Len is how many rules x holds.
func (x *Index) Len() int { return len(x.rules) }

// Matching returns the rules ev matches (Rule.Matches), in the order they were given.
func (x *Index) Matching(ev event.Event) []Rule {
	if ev.Status != event.StatusActive || len(x.rules) == 0 {
		return nil
	}
	extent := ev.Extent()
	b := boundsOf(extent)
	candidates := append([]int32{}, x.wide...)
	lo, hi := cellOf(b.minLat, b.minLon), cellOf(b.maxLat, b.maxLon)
	for a := lo[0]; a <= hi[0]; a++ {
		for o := lo[1]; o <= hi[1]; o++ {
			candidates = append(candidates, x.grid[[2]int32{a, o}]...)
		}
	}
	slices.Sort(candidates)
	var out []Rule
	for _, i := range slices.Compact(candidates) {
		if r := x.rules[i]; r.box.overlaps(b) && r.Matches(ev) {
			out = append(out, r.Rule)
		}
	}
	return out
}

// ForgetAddress removes an erased person's address from the rules of org they made
// (created_by_email; docs/privacy.md §6).
func (r *Rules) ForgetAddress(ctx context.Context, org, email string) error {
	return store.ForgetValue(ctx, r.table, store.Query{PK: Partition, Prefix: skRule + org + "#"}, email, nil)
}

// RemoveOrg removes the rules of an organisation being deleted, and their count
// (docs/privacy.md §6).
func (r *Rules) RemoveOrg(ctx context.Context, org string) error {
	if err := store.DeleteSelected(ctx, r.table, store.Query{PK: Partition, Prefix: skRule + org + "#"}); err != nil {
		return fmt.Errorf("alerts: remove the rules of %s: %w", org, err)
	}
	return store.DeleteKeys(ctx, r.table, []store.Key{countKey(org)})
}
