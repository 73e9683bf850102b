//go:build !linux

package embedded

// releaseMapping leaves the mapping as it is where madvise is not at hand.
func (s *Store) releaseMapping() {}
