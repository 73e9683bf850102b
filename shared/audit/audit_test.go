package audit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/roadevents/roadevents/shared/audit"
	"github.com/roadevents/roadevents/shared/store/storetest/tables"
)

// docs/api.md §4.3 and §2.9: entries read back newest first, limit honoured, actor_email as
// written, absent actor and target as null, detail {} by default; another organisation's log is
// apart.
func TestRecordAndList(t *testing.T) {
	t.Parallel()
	tables.Each(t, func(t *testing.T, tab tables.Table) {
		t.Parallel()
		ctx := context.Background()
		l := audit.New(tab.Table, audit.Options{Clock: tab.Clock})
		for i := range 5 {
			if err := l.Record(ctx, "org_a", fmt.Sprintf("test.step%d", i), "usr_ada", "ada@example.com", "thing", map[string]any{"n": i}); err != nil {
				t.Fatal(err)
			}
			tab.Clock.Advance(time.Second)
		}
		if err := l.Record(ctx, "org_a", "test.system", "", "", "", nil); err != nil {
			t.Fatal(err)
		}
		if err := l.Record(ctx, "org_b", "test.other", "usr_bob", "bob@example.com", "", nil); err != nil {
			t.Fatal(err)
		}
		got, err := l.List(ctx, "org_a", 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].Action != "test.system" || got[1].Action != "test.step4" || got[2].Action != "test.step3" {
			t.Fatalf("List(org_a, 3) = %+v; want test.system, test.step4, test.step3", got)
		}
		if got[0].ActorUserID != nil || got[0].ActorEmail != nil || got[0].Target != nil || got[0].Detail == nil || len(got[0].Detail) != 0 {
			t.Errorf("entry without actor = %+v; want null actor and target, empty detail", got[0])
		}
		if e := got[1]; e.ActorEmail == nil || *e.ActorEmail != "ada@example.com" || *e.ActorUserID != "usr_ada" || *e.Target != "thing" ||
			fmt.Sprint(e.Detail["n"]) != "4" || !e.CreatedAt.Equal(tables.Start.Add(4*time.Second)) || e.AuditID == "" {
			t.Errorf("entry = %+v; want ada's test.step4 at Start+4s with detail n=4", e)
		}
		all, err := l.List(ctx, "org_a", audit.MaxLimit)
		if err != nil || len(all) != 6 {
			t.Errorf("List(org_a, max) = %d entries, %v; want 6", len(all), err)
		}
		other, err := l.List(ctx, "org_b", 50)
		if err != nil || len(other) != 1 || other[0].Action != "test.other" {
			t.Errorf("List(org_b) = %+v, %v; want its one entry", other, err)
		}
	})
}

// docs/api.md §10.3: detail never holds a secret; a limit outside 1..MaxLimit is refused.
func TestRefusals(t *testing.T) {
	t.Parallel()
	tab := tables.Embedded(t)
	ctx := context.Background()
	l := audit.New(tab.Table, audit.Options{Clock: tab.Clock})
	for _, name := range []string{"token", "Token", "key", "secret", "totp_code", "code"} {
		if err := l.Record(ctx, "org_a", "x.y", "", "", "", map[string]any{name: "s3cr3t"}); !errors.Is(err, audit.ErrSecretDetail) {
			t.Errorf("Record with detail member %q = %v; want ErrSecretDetail", name, err)
		}
	}
	if got, _ := l.List(ctx, "org_a", 10); len(got) != 0 {
		t.Errorf("refused entries were written: %+v", got)
	}
	for _, limit := range []int{0, -1, audit.MaxLimit + 1} {
		if _, err := l.List(ctx, "org_a", limit); !errors.Is(err, audit.ErrInvalid) {
			t.Errorf("List(limit %d) = %v; want ErrInvalid", limit, err)
		}
	}
	if err := l.Record(ctx, "", "x.y", "", "", "", nil); !errors.Is(err, audit.ErrInvalid) {
		t.Errorf("Record without organisation = %v; want ErrInvalid", err)
	}
}
