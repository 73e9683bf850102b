// Package sysmem tells how much memory the process may use, for what sizes itself from the
// machine: the collector's memory limit (docs/performance.md §7) and the area cache (§5).
package sysmem

import (
	"bufio"
	"bytes"
	"strconv"
)

// Available returns the bytes the process may use: its cgroup (v2) limit when one is
// set and below the machine's memory, else the machine's; 0 when neither can be read.
func Available(readFile func(string) ([]byte, error)) uint64 {
	var total uint64
	if b, err := readFile("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := bytes.Fields(sc.Bytes())
			if len(f) >= 2 && string(f[0]) == "MemTotal:" {
				if kib, err := strconv.ParseUint(string(f[1]), 10, 64); err == nil {
					total = kib << 10
				}
				break
			}
		}
	}
	if b, err := readFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64); err == nil && (total == 0 || limit < total) {
			total = limit
		}
	}
	return total
}
