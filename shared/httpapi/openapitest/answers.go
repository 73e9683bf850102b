package openapitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/roadevents/roadevents/shared/apitest"
)

// Answers checks answers against a document with kin-openapi, a validator that third-party
// clients use: the status must be documented for the operation, the documented headers must
// hold their schemas, and a JSON body must match its schema. A text/event-stream answer is
// checked for its status and headers only: its body never ends.
type Answers struct {
	router routers.Router
}

var (
	answersMu sync.Mutex
	answers   = map[string]*Answers{}
)

// AnswersOf returns the checker of doc, built once per distinct document (tests build many
// services with one document).
func AnswersOf(doc []byte) (*Answers, error) {
	answersMu.Lock()
	defer answersMu.Unlock()
	if a := answers[string(doc)]; a != nil {
		return a, nil
	}
	d, err := openapi3.NewLoader().LoadFromData(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: load the document: %w", err)
	}
	// Operations are found by method and path alone, wherever a test serves them.
	d.Servers = nil
	router, err := legacy.NewRouter(d)
	if err != nil {
		return nil, fmt.Errorf("openapitest: route the document: %w", err)
	}
	a := &Answers{router: router}
	answers[string(doc)] = a
	return a, nil
}

// Check validates one answer to req. A request no documented operation matches (an unknown
// path, a method the document does not list, such as a CORS preflight) is not checked: the
// router's own 404 and 405 belong to no operation.
func (a *Answers) Check(req *http.Request, status int, header http.Header, body []byte) error {
	if p := req.URL.Path; p != "/" && strings.HasSuffix(p, "/") {
		return nil // no route ends with a slash (kin-openapi's router would ignore it): the router's 404
	}
	route, params, err := a.router.FindRoute(req)
	if err != nil {
		return nil
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}
	// A stream's body never ends; any other is checked as a client reads it, its compression
	// undone (docs/api.md §10.1): the document describes the JSON.
	if isEventStream(header) {
		opts.ExcludeResponseBody = true
	} else if body, err = apitest.Decompressed(header.Get("Content-Encoding"), body); err != nil {
		return fmt.Errorf("%s %.200s answered %d with a body that does not decode: %w", req.Method, req.URL.RequestURI(), status, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options:                opts,
	}
	if err := withoutUntypedNull(openapi3filter.ValidateResponse(context.Background(), in)); err != nil {
		return fmt.Errorf("%s %.200s answered %d, which /openapi.json does not allow: %w\nbody: %.2000s",
			req.Method, req.URL.RequestURI(), status, err, body)
	}
	return nil
}

// withoutUntypedNull drops from err the refusals of a null by a schema that names no type,
// which accepts every value in JSON Schema 2020-12 (a validation error's input, {}):
// kin-openapi checks schemas reached through a $ref with its OpenAPI 3.0 rules, where such
// a schema refuses null.
func withoutUntypedNull(err error) error {
	var re *openapi3filter.ResponseError
	if !errors.As(err, &re) || re.Err == nil {
		return err
	}
	var kept openapi3.MultiError
	var all openapi3.MultiError
	if !errors.As(re.Err, &all) {
		all = openapi3.MultiError{re.Err}
	}
	for _, e := range all {
		var se *openapi3.SchemaError
		if errors.As(e, &se) && se.Value == nil && se.SchemaField == "nullable" && (se.Schema == nil || se.Schema.Type == nil || len(*se.Schema.Type) == 0) {
			continue
		}
		kept = append(kept, e)
	}
	if len(kept) == 0 {
		return nil
	}
	re.Err = kept
	return re
}

// Handler serves h, checking each of its answers and handing a mismatch to report. An answer
// is held until it is checked, so report runs before the client has it (a test that
// received the answer is still running); a stream is checked when its header is written.
func (a *Answers) Handler(h http.Handler, report func(error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &held{w: w, check: func(status int, header http.Header, body []byte) {
			if err := a.Check(r, status, header, body); err != nil {
				report(err)
			}
		}}
		h.ServeHTTP(rec, r)
		rec.finish()
	})
}

// held is a ResponseWriter that holds the answer until it is checked, but for a stream,
// which goes through (with its flushes, and the hijack of its connection) once its header
// is checked.
type held struct {
	w      http.ResponseWriter
	check  func(status int, header http.Header, body []byte)
	status int
	stream bool
	body   bytes.Buffer
}

func (h *held) Header() http.Header { return h.w.Header() }

func (h *held) WriteHeader(status int) {
	if h.status != 0 {
		return
	}
	h.status = status
	if isEventStream(h.w.Header()) {
		h.stream = true
		h.check(status, h.w.Header(), nil)
		h.w.WriteHeader(status)
	}
}

func (h *held) Write(b []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	if h.stream {
		return h.w.Write(b)
	}
	return h.body.Write(b)
}

// Flush flushes a stream; any other answer is sent whole once checked.
func (h *held) Flush() {
	if h.stream {
		_ = http.NewResponseController(h.w).Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer (a stream's hijack).
func (h *held) Unwrap() http.ResponseWriter { return h.w }

// finish checks and sends a held answer.
func (h *held) finish() {
	if h.stream {
		return
	}
	if h.status == 0 {
		h.status = http.StatusOK
	}
	h.check(h.status, h.w.Header(), h.body.Bytes())
	h.w.WriteHeader(h.status)
	_, _ = h.w.Write(h.body.Bytes())
}

func isEventStream(header http.Header) bool {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	return mt == "text/event-stream"
}

var _ http.Flusher = (*held)(nil)
