package embedded

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// releaseMapping drops the table file's pages from the process's memory once a flush has
// left the store at rest (docs/performance.md §6). bbolt reads the file through a shared
// mapping, and every page a flush rewrites was read through it, so after a burst of writes
// most of the file counted in the process's resident memory, though nothing reads it there
// again soon: queries are answered from the area cache. MADV_DONTNEED on a shared file mapping
// loses nothing: the pages stay in the page cache, which the kernel reclaims as it needs, and a
// later read maps them again. The read transaction keeps bbolt from mapping the file anew
// meanwhile; tx.Size() is the file's used length, which the mapping always covers.
func (s *Store) releaseMapping() {
	err := s.db.View(func(tx *bolt.Tx) error {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.db.Info().Data, uintptr(tx.Size()), syscall.MADV_DONTNEED); errno != 0 {
			return errno
		}
		return nil
	})
	if err != nil {
		s.log.Warn("embedded: releasing the table file's mapped pages failed", "err", err)
	}
}
