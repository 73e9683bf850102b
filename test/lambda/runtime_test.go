package lambda_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// runtimeAPI is a loopback Lambda Runtime API (the documented 2018-06-01 interface a custom
// runtime's bootstrap polls): it hands out the events given to invoke, one per
// GET .../invocation/next, and collects what the function posts back. It also answers the
// Extensions API (2020-01-01) as far as a function registering an internal extension needs
// it: aws-lambda-go registers one so that Lambda sends the process SIGTERM before it is
// reclaimed (lambda.WithEnableSIGTERM).
type runtimeAPI struct {
	srv    *http.Server
	addr   string
	queue  chan invocation
	mu     sync.Mutex
	byID   map[string]invocation
	initCh chan string // the body of POST /runtime/init/error
	nextID int
	// polled is closed at the first GET .../invocation/next, the end of the function's init,
	// at polledAt.
	polled     chan struct{}
	pollOnce   sync.Once
	polledAt   time.Time
	extensions []string // the names of the extensions registered
}

// invocation is one event handed to the function and where its outcome goes.
type invocation struct {
	id      string
	payload []byte
	result  chan outcome
}

// outcome is what the function posted for an invocation.
type outcome struct {
	response []byte // .../response
	errBody  []byte // .../error
}

func newRuntimeAPI(t testing.TB) *runtimeAPI {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	r := &runtimeAPI{
		addr:   ln.Addr().String(),
		queue:  make(chan invocation, 64),
		byID:   map[string]invocation{},
		initCh: make(chan string, 1),
		polled: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", r.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", func(w http.ResponseWriter, req *http.Request) {
		r.finish(w, req, false)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", func(w http.ResponseWriter, req *http.Request) {
		r.finish(w, req, true)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		select {
		case r.initCh <- string(body):
		default:
		}
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, `{"status":"OK"}`)
	})
	mux.HandleFunc("POST /2020-01-01/extension/register", func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.extensions = append(r.extensions, req.Header.Get("Lambda-Extension-Name"))
		id := fmt.Sprintf("ext-%d", len(r.extensions))
		r.mu.Unlock()
		w.Header().Set("Lambda-Extension-Identifier", id)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"functionName":"roadevents-test","functionVersion":"$LATEST","handler":"bootstrap"}`)
	})
	// An extension registered for no events waits here until the instance goes away.
	mux.HandleFunc("GET /2020-01-01/extension/event/next", func(w http.ResponseWriter, req *http.Request) {
		<-req.Context().Done()
	})
	r.srv = &http.Server{Handler: mux}
	go r.srv.Serve(ln)
	t.Cleanup(func() { r.srv.Close() })
	return r
}

// next blocks, as Lambda's does, until an event is queued (or the function goes away).
func (r *runtimeAPI) next(w http.ResponseWriter, req *http.Request) {
	r.pollOnce.Do(func() {
		r.polledAt = time.Now()
		close(r.polled)
	})
	var inv invocation
	select {
	case inv = <-r.queue:
	case <-req.Context().Done():
		return
	}
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:000000000000:function:roadevents-test")
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000;Sampled=0")
	h.Set("Content-Type", "application/json")
	w.Write(inv.payload)
}

func (r *runtimeAPI) finish(w http.ResponseWriter, req *http.Request, failed bool) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	inv, ok := r.byID[req.PathValue("id")]
	delete(r.byID, req.PathValue("id"))
	r.mu.Unlock()
	if !ok {
		http.Error(w, `{"errorMessage":"unknown request id"}`, http.StatusBadRequest)
		return
	}
	o := outcome{response: body}
	if failed {
		o = outcome{errBody: body}
	}
	inv.result <- o
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, `{"status":"OK"}`)
}

// registered returns the names of the extensions the function registered.
func (r *runtimeAPI) registered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.extensions)
}

// enqueue queues an event (encoded as JSON) and returns where its outcome will arrive.
func (r *runtimeAPI) enqueue(t testing.TB, ev any) <-chan outcome {
	t.Helper()
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("encode event: %v", err)
	}
	r.mu.Lock()
	r.nextID++
	inv := invocation{id: fmt.Sprintf("req-%04d", r.nextID), payload: payload, result: make(chan outcome, 1)}
	r.byID[inv.id] = inv
	r.mu.Unlock()
	r.queue <- inv
	return inv.result
}

// wait decodes the response to an invocation into resp, failing the test on an error, an init
// error, the process ending, or ctx ending.
func (r *runtimeAPI) wait(ctx context.Context, t testing.TB, res <-chan outcome, exited <-chan struct{}, resp any) {
	t.Helper()
	select {
	case o := <-res:
		if o.errBody != nil {
			t.Fatalf("function reported an invocation error: %s", o.errBody)
		}
		if err := json.Unmarshal(o.response, resp); err != nil {
			t.Fatalf("decode response %s: %v", o.response, err)
		}
	case body := <-r.initCh:
		t.Fatalf("function reported an init error: %s", body)
	case <-exited:
		t.Fatalf("function exited before answering")
	case <-ctx.Done():
		t.Fatalf("no answer: %v", ctx.Err())
	}
}
