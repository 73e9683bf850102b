package eventsgroup

import (
	"os"
	"testing"

	"github.com/roadevents/roadevents/shared/config"
	"github.com/roadevents/roadevents/shared/sysmem"
)

// docs/performance.md §5: the embedded store's area cache may hold a quarter of the memory
// the process may use, at least 512 MB; processes sharing DynamoDB keep none, since another
// process's write would leave theirs stale (docs/architecture.md, "Area cache of a sole
// writer").
func TestAreaCacheSizesFromTheMachine(t *testing.T) {
	if got := areaCacheBytes(config.StoreDynamoDB); got != 0 {
		t.Errorf("area cache on DynamoDB = %d bytes; want none", got)
	}
	got := areaCacheBytes(config.StoreEmbedded)
	avail := int64(sysmem.Available(os.ReadFile))
	if got < minAreaCache || got > max(minAreaCache, avail/2) {
		t.Errorf("area cache on the embedded store = %d MiB with %d MiB available; want at least 512 MiB and about a quarter", got>>20, avail>>20)
	}
}
