package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/roadevents/roadevents/shared/schema"
)

// OpenAPI returns the OpenAPI 3.1.0 document of the routes added so far (docs/api.md §10.1:
// every route, body and response, with the schema names listed there), as JSON. The
// schemas are the ones the router validates with, so the document cannot drift from the
// behaviour.
func (a *API) OpenAPI() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.doc != nil {
		return a.doc
	}
	comps, err := a.components()
	if err != nil {
		// Handle refuses routes that would get here.
		panic(fmt.Sprintf("httpapi: openapi: %v", err))
	}
	doc := document{
		OpenAPI: "3.1.0",
		Info: info{Title: Title, Version: Version, Description: a.cfg.Description,
			Contact: contact{Name: Title}},
		// Relative to where the document was fetched: the origin that serves it serves the
		// routes (docs/architecture.md §5).
		Servers: []server{{URL: "/", Description: "The origin this document was fetched from."}},
		Paths:   map[string]map[string]*operation{},
		Components: components{
			Schemas:         map[string]json.RawMessage{},
			SecuritySchemes: securitySchemes,
		},
	}
	for name, s := range comps.request {
		doc.Components.Schemas[name] = comps.requests.Definition(s)
	}
	for name, s := range comps.answer {
		if public, ok := comps.answers.Rename[name]; ok {
			name = public
		}
		doc.Components.Schemas[name] = comps.answers.Definition(s)
	}
	used := map[string]bool{}
	for _, rt := range a.routes {
		if rt.Hidden {
			continue
		}
		path := docPath(rt.Path)
		if doc.Paths[path] == nil {
			doc.Paths[path] = map[string]*operation{}
		}
		doc.Paths[path][strings.ToLower(rt.Method)] = buildOperation(rt, comps)
		for _, t := range rt.Tags {
			used[t] = true
		}
	}
	for _, t := range a.cfg.Tags {
		if used[t.Name] {
			doc.Tags = append(doc.Tags, t)
			delete(used, t.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(used)) {
		doc.Tags = append(doc.Tags, Tag{Name: name})
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(fmt.Sprintf("httpapi: openapi: %v", err))
	}
	a.doc = b
	return b
}

// componentSet is the named schemas of the document. A request's objects refuse unknown
// members and an answer's accept them (schema.Rendering), so a schema named on both sides is
// two components: the request keeps the name, the answer's copy is the name + "Public".
type componentSet struct {
	request, answer   map[string]*schema.Schema
	requests, answers schema.Rendering
}

// components gathers every named schema of the routes plus the error bodies, failing on two
// different schemas with one name, or on an answer copy whose name is taken.
func (a *API) components() (componentSet, error) {
	var requests, answers []*schema.Schema
	answers = append(answers, ErrorSchema, schema.HTTPValidationErrorSchema, schema.ValidationErrorSchema)
	for _, rt := range a.routes {
		requests = append(requests, rt.Body)
		for _, p := range rt.Params {
			requests = append(requests, p.Schema)
		}
		for _, resp := range rt.Responses {
			answers = append(answers, resp.Schema)
			for _, h := range resp.Headers {
				answers = append(answers, h.Schema)
			}
			for _, f := range resp.Frames {
				answers = append(answers, f.Schema)
			}
		}
	}
	set := componentSet{answers: schema.Rendering{Answer: true, Rename: map[string]string{}}}
	var err error
	if set.request, err = schema.Components(requests...); err != nil {
		return set, err
	}
	if set.answer, err = schema.Components(answers...); err != nil {
		return set, err
	}
	for name, s := range set.answer {
		req := set.request[name]
		if req == nil {
			continue
		}
		if req != s && !bytes.Equal(req.Definition(), s.Definition()) {
			return set, fmt.Errorf("schema: two different schemas are named %q", name)
		}
		public := name + "Public"
		if set.request[public] != nil || set.answer[public] != nil {
			return set, fmt.Errorf("schema %q is used in requests and answers, and the name of its answer copy, %q, is taken", name, public)
		}
		set.answers.Rename[name] = public
	}
	return set, nil
}

var restWildcard = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\.\.\.\}`)

// docPath turns a ServeMux pattern into an OpenAPI path template.
func docPath(p string) string {
	p = strings.TrimSuffix(p, "{$}")
	return restWildcard.ReplaceAllString(p, "{$1}")
}

func buildOperation(rt *Route, comps componentSet) *operation {
	op := &operation{
		Tags:        rt.Tags,
		Summary:     rt.Summary,
		Description: rt.Description,
		OperationID: rt.OperationID,
		Responses:   map[string]response{},
	}
	for _, p := range rt.Params {
		op.Parameters = append(op.Parameters, parameter{
			Name:        p.Name,
			In:          p.In,
			Description: p.Description,
			Required:    p.Required,
			Schema:      comps.requests.JSONSchema(p.Schema),
		})
	}
	if rt.Body != nil {
		op.RequestBody = &requestBody{
			Required: !rt.OptionalBody,
			Content:  map[string]mediaType{"application/json": {Schema: comps.requests.JSONSchema(rt.Body)}},
		}
	}
	for status, r := range rt.Responses {
		resp := response{Description: r.Description}
		if resp.Description == "" {
			resp.Description = "Response " + strconv.Itoa(status)
		}
		if r.Schema != nil || r.ContentType != "" {
			ct := r.ContentType
			if ct == "" {
				ct = "application/json"
			}
			mt := mediaType{}
			if r.Schema != nil {
				mt.Schema = comps.answers.JSONSchema(r.Schema)
			}
			resp.Content = map[string]mediaType{ct: mt}
		}
		for _, h := range r.Headers {
			if resp.Headers == nil {
				resp.Headers = map[string]header{}
			}
			hs := h.Schema
			if hs == nil {
				hs = schema.String()
			}
			resp.Headers[h.Name] = header{Description: h.Description, Schema: comps.answers.JSONSchema(hs)}
		}
		op.Responses[strconv.Itoa(status)] = resp
		for _, f := range r.Frames {
			if op.SSEFrames == nil {
				op.SSEFrames = map[string]json.RawMessage{}
			}
			op.SSEFrames[f.Event] = comps.answers.JSONSchema(f.Schema)
		}
	}
	// An open route says so (security: []), so that no tool mistakes it for one that forgot.
	op.Security = []map[string][]string{}
	for _, s := range rt.Security {
		op.Security = append(op.Security, map[string][]string{string(s): {}})
	}
	return op
}

// securitySchemes describes the credentials of docs/api.md §5 and §10.3.
var securitySchemes = map[string]securityScheme{
	string(SecurityAPIKey): {Type: "http", Scheme: "bearer", BearerFormat: "svc_ + 43 base62 characters",
		Description: "API key in Authorization: Bearer. It never goes in a URL."},
	string(SecuritySession): {Type: "http", Scheme: "bearer", BearerFormat: "ses_ + 43 base62 characters",
		Description: "Console session token in Authorization: Bearer."},
	string(SecurityTempToken): {Type: "http", Scheme: "bearer", BearerFormat: "tmp_ + 43 base62 characters",
		Description: "Five-minute token between the e-mail code and the TOTP step of sign-in."},
	string(SecurityStreamTicket): {Type: "apiKey", In: "query", Name: "ticket",
		Description: "Stream ticket (svc_st_ + 43 base62 characters), valid 300 s at connect, on /v1/stream only."},
}

type document struct {
	OpenAPI    string                           `json:"openapi"`
	Info       info                             `json:"info"`
	Servers    []server                         `json:"servers"`
	Tags       []Tag                            `json:"tags,omitempty"`
	Paths      map[string]map[string]*operation `json:"paths"`
	Components components                       `json:"components"`
}

type info struct {
	Title       string  `json:"title"`
	Version     string  `json:"version"`
	Description string  `json:"description,omitempty"`
	Contact     contact `json:"contact"`
}

type contact struct {
	Name string `json:"name"`
}

type server struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

// Tag describes one of the tags that group operations (Route.Tags), for the document's
// top-level tags list.
type Tag struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type operation struct {
	Tags        []string              `json:"tags,omitempty"`
	Summary     string                `json:"summary,omitempty"`
	Description string                `json:"description,omitempty"`
	OperationID string                `json:"operationId"`
	Parameters  []parameter           `json:"parameters,omitempty"`
	RequestBody *requestBody          `json:"requestBody,omitempty"`
	Responses   map[string]response   `json:"responses"`
	Security    []map[string][]string `json:"security"`
	// SSEFrames maps the event name of each frame of a text/event-stream answer to the schema
	// of its data (Response.Frames), for generators, which read no SSE.
	SSEFrames map[string]json.RawMessage `json:"x-sse-frames,omitempty"`
}

type parameter struct {
	Name        string          `json:"name"`
	In          string          `json:"in"`
	Description string          `json:"description,omitempty"`
	Required    bool            `json:"required,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

type requestBody struct {
	Required bool                 `json:"required"`
	Content  map[string]mediaType `json:"content"`
}

type mediaType struct {
	Schema json.RawMessage `json:"schema,omitempty"`
}

type response struct {
	Description string               `json:"description"`
	Headers     map[string]header    `json:"headers,omitempty"`
	Content     map[string]mediaType `json:"content,omitempty"`
}

type header struct {
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema"`
}

type components struct {
	Schemas         map[string]json.RawMessage `json:"schemas"`
	SecuritySchemes map[string]securityScheme  `json:"securitySchemes"`
}

type securityScheme struct {
	Type         string `json:"type"`
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme,omitempty"`
	BearerFormat string `json:"bearerFormat,omitempty"`
	Name         string `json:"name,omitempty"`
	In           string `json:"in,omitempty"`
}

// OpenAPIHandler serves the document as application/json, for GET /openapi.json.
func (a *API) OpenAPIHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc := a.OpenAPI()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(doc)))
		_, _ = w.Write(doc)
	})
}
