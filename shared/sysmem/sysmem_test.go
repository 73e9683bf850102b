package sysmem

import (
	"io/fs"
	"testing"
)

// The memory the process may use is the cgroup's limit when it is below the machine's memory,
// else the machine's (docs/performance.md §7).
func TestAvailableMemoryPrefersTheSmallerOfCgroupAndMachine(t *testing.T) {
	meminfo := "MemTotal:       24684140 kB\nMemFree:        20000000 kB\n"
	machine := uint64(24684140) << 10
	for _, c := range []struct {
		name  string
		files map[string]string
		want  uint64
	}{
		{"machine only", map[string]string{"/proc/meminfo": meminfo}, machine},
		{"no cgroup limit", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "max\n"}, machine},
		{"cgroup limit below", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "1073741824\n"}, 1 << 30},
		{"cgroup limit above", map[string]string{"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": "107374182400\n"}, machine},
		{"cgroup only", map[string]string{"/sys/fs/cgroup/memory.max": "536870912"}, 512 << 20},
		{"nothing readable", map[string]string{}, 0},
	} {
		read := func(name string) ([]byte, error) {
			if s, ok := c.files[name]; ok {
				return []byte(s), nil
			}
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		if got := Available(read); got != c.want {
			t.Errorf("%s: Available = %d; want %d", c.name, got, c.want)
		}
	}
}
