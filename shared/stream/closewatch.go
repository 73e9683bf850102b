package stream

import (
	"sync"
	"syscall"
	"time"
)

// CloseCheckInterval is how often the streams on taken-over connections are checked for a
// client that closed its end (docs/operations.md §3).
const CloseCheckInterval = time.Second

// closeWatcher notices the streams whose client closed the connection, without waiting for
// their next write (a keepalive comes only every 20 s). One goroutine checks every watched
// connection each CloseCheckInterval with a read that never blocks, which costs a stream no
// goroutine and no buffer of its own (docs/performance.md §8); it runs only while there is
// something to watch.
type closeWatcher struct {
	mu      sync.Mutex
	conns   map[syscall.RawConn]chan struct{}
	running bool
}

// watch starts watching rc and returns a channel closed once its client has closed it (or
// reset it); stop with unwatch. ok is false when the connection cannot be read without
// blocking (not a socket): it is then noticed at its next write only.
func (w *closeWatcher) watch(c any) (rc syscall.RawConn, gone chan struct{}, ok bool) {
	sc, isSys := c.(syscall.Conn)
	if !isSys {
		return nil, nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	gone = make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conns == nil {
		w.conns = map[syscall.RawConn]chan struct{}{}
	}
	w.conns[rc] = gone
	if !w.running {
		w.running = true
		go w.run()
	}
	return rc, gone, true
}

func (w *closeWatcher) unwatch(rc syscall.RawConn) {
	w.mu.Lock()
	delete(w.conns, rc)
	w.mu.Unlock()
}

func (w *closeWatcher) run() {
	t := time.NewTicker(CloseCheckInterval)
	defer t.Stop()
	var check []syscall.RawConn
	for range t.C {
		w.mu.Lock()
		if len(w.conns) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		check = check[:0]
		for rc := range w.conns {
			check = append(check, rc)
		}
		w.mu.Unlock()
		for _, rc := range check {
			if !peerClosed(rc) {
				continue
			}
			w.mu.Lock()
			if gone, ok := w.conns[rc]; ok {
				close(gone)
				delete(w.conns, rc)
			}
			w.mu.Unlock()
		}
	}
}
