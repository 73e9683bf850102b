package sdk

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/roadevents/roadevents/shared/webhooks/signature"
)

// Delivery is a webhook delivery's body (docs/webhooks.md §1, §5).
type Delivery struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	CreatedAt   time.Time `json:"created_at"`
	Environment string    `json:"environment"`
	Data        struct {
		Event Event `json:"event"`
		// Rule names the alert rule of an alert.* delivery.
		Rule *struct {
			RuleID string `json:"rule_id"`
			Name   string `json:"name"`
		} `json:"rule,omitempty"`
		// Reason says why an alert.ended came.
		Reason string `json:"reason,omitempty"`
	} `json:"data"`
}

// Receiver is an http.Handler for an endpoint's deliveries (docs/webhooks.md §2, §3): it checks
// each delivery's signature against the endpoint's secrets and its time against the clock,
// refuses one that fails with 400 (so a forged or replayed one is never handled), drops a
// repeat of a delivery it handled lately, and hands the rest to Handle. It answers 200 when
// Handle returns nil, 500 otherwise, so that the service sends the delivery again later.
type Receiver struct {
	// Secrets are the endpoint's signing secrets: the current one and, during a rotation, the
	// previous one.
	Secrets []string
	// Handle takes a delivery; it should store it and return quickly (the service waits 10 s).
	Handle func(*http.Request, Delivery) error
	// Tolerance bounds the age of a delivery's signature; 5 minutes when 0.
	Tolerance time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Remember is how many handled delivery ids are kept to drop repeats; 10 000 when 0.
	Remember int

	mu   sync.Mutex
	seen map[string]bool
	ids  []string
}

// MaxDeliveryBytes bounds a delivery's body: an event is at most about 15 KB.
const MaxDeliveryBytes = 1 << 20

func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxDeliveryBytes))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	now, tolerance := time.Now(), rc.Tolerance
	if rc.Now != nil {
		now = rc.Now()
	}
	if tolerance == 0 {
		tolerance = signature.DefaultTolerance
	}
	header := r.Header.Get(signature.Header)
	valid := false
	for _, s := range rc.Secrets {
		if signature.Verify(header, body, s, now, tolerance) == nil {
			valid = true
			break
		}
	}
	if !valid {
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	var d Delivery
	if err := json.Unmarshal(body, &d); err != nil || d.ID == "" {
		http.Error(w, "not a delivery", http.StatusBadRequest)
		return
	}
	if rc.handled(d.ID) {
		w.WriteHeader(http.StatusOK) // a repeat (deliveries are at least once)
		return
	}
	if err := rc.Handle(r, d); err != nil {
		http.Error(w, "not handled", http.StatusInternalServerError)
		return
	}
	rc.remember(d.ID)
	w.WriteHeader(http.StatusOK)
}

func (rc *Receiver) handled(id string) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.seen[id]
}

func (rc *Receiver) remember(id string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.seen == nil {
		rc.seen = map[string]bool{}
	}
	limit := rc.Remember
	if limit <= 0 {
		limit = 10_000
	}
	if len(rc.ids) >= limit {
		delete(rc.seen, rc.ids[0])
		rc.ids = rc.ids[1:]
	}
	rc.seen[id] = true
	rc.ids = append(rc.ids, id)
}
