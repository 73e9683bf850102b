//go:build unix

package stream

import (
	"errors"
	"syscall"
)

// peerClosed reads what the client sent without blocking, and discards it (a stream's client
// has nothing to say after its request): it reports an end of file or a reset, and not a
// connection with nothing to read.
func peerClosed(rc syscall.RawConn) bool {
	var buf [64]byte
	closed := false
	err := rc.Read(func(fd uintptr) bool {
		for range 4 {
			n, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_DONTWAIT)
			switch {
			case errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR):
				return true
			case err != nil || n == 0:
				closed = true
				return true
			}
		}
		return true // a client sending on and on: looked at again next time
	})
	return closed || err != nil
}
