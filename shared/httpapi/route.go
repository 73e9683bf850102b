package httpapi

import (
	"net/http"

	"github.com/roadevents/roadevents/shared/schema"
)

// Security names a credential a route accepts. The value is also the name of the scheme
// under components.securitySchemes in /openapi.json.
type Security string

// The credentials of docs/api.md §5 and §10.3. A route with several accepts any one of them.
const (
	// SecurityAPIKey is an API key (svc_...) in Authorization: Bearer, on /v1.
	SecurityAPIKey Security = "APIKey"
	// SecuritySession is a console session token (ses_...) in Authorization: Bearer.
	SecuritySession Security = "SessionToken"
	// SecurityTempToken is the TOTP bridge token (tmp_...) of verify-totp and verify-recovery.
	SecurityTempToken Security = "TempToken"
	// SecurityStreamTicket is a stream ticket (svc_st_...) in the ticket query parameter of
	// /v1/stream only (docs/api.md §5: an API key never goes in a URL).
	SecurityStreamTicket Security = "StreamTicket"
)

// Route is one operation: how it is matched, what it accepts, what it answers, and the
// handler. The router validates parameters and body against the declaration before the
// handler runs, and /openapi.json is generated from the same declaration.
type Route struct {
	// Method is the HTTP method (GET, POST, PATCH, DELETE, ...).
	Method string
	// Path is a net/http ServeMux path pattern without method or host, for example
	// /v1/events/{event_id}. Use /{$} for the root alone: a path ending in "/" would match
	// a whole subtree and hide the JSON 404.
	Path string
	// OperationID names the operation in the document; derived from method and path when
	// empty. Unique per API.
	OperationID string
	// Summary is the one-line title of the operation in the document.
	Summary string
	// Description is longer prose for the document.
	Description string
	// Tags group operations in the document.
	Tags []string
	// Security lists the accepted credentials; empty means the route is open. The router only
	// documents it: authentication is a RouteMiddleware's job (see Config.Middleware).
	Security []Security
	// Params are the query and path parameters. Path wildcards not declared here are
	// documented as required strings.
	Params []schema.Param
	// Body is the JSON request body; nil means the route reads none. A declared body is
	// required unless OptionalBody.
	Body *schema.Schema
	// OptionalBody lets a request leave the declared Body out (no body, or JSON null); one
	// that sends it is validated as usual.
	OptionalBody bool
	// Validate, when set, validates the decoded body instead of Body.Validate: for payloads with
	// cross-field rules that a schema cannot state (docs/api.md §2.2: geometry start, occurred_at
	// slack, subtype under its type), so that they are reported in the same 422 as the schema's
	// errors (docs/api.md §10.1: every error of a payload is reported). It receives the body as
	// Body.Validate does (decoded with UseNumber) and must include Body's own errors. Body still
	// documents, normalises and types the body. Validate may also return the body already decoded
	// into the type the handler reads it as (nil otherwise): JSON then hands that over rather than
	// encoding and decoding the body once more, a cost that shows on the publish path
	// (docs/performance.md §2).
	Validate func(body any) (decoded any, errs schema.Errors)
	// MaxBodyBytes overrides Config.MaxBodyBytes for this route.
	MaxBodyBytes int64
	// NoStore marks a route whose answers belong to one caller and may hold a credential:
	// every answer, refusals included, is sent with Cache-Control: no-store (docs/api.md §11.3).
	NoStore bool
	// Responses by status code. A route with parameters or a body gets 422
	// (HTTPValidationError) and a secured route gets 401 without declaring them; a route
	// declaring no 2xx gets "200 Successful Response".
	Responses map[int]Response
	// Errors turns the handler's domain errors into responses (see ErrorTable).
	Errors ErrorTable
	// Hidden keeps the route out of /openapi.json.
	Hidden bool
	// Handler serves the request once parameters and body are valid. JSON makes one from a
	// typed function, and is required for a route with a Body; a HandlerFunc suits the rest
	// (streams, documents). Both write returned errors through Errors.
	Handler http.Handler
}

// Response documents one status of a route.
type Response struct {
	// Description is required by OpenAPI; it says when the status is sent.
	Description string
	// Schema of the body; nil for a response without a documented body.
	Schema *schema.Schema
	// ContentType defaults to application/json when Schema is set.
	ContentType string
	// Headers sent with the response.
	Headers []Header
	// Frames documents the frames of a text/event-stream answer: the document maps each
	// event name to the schema of its data (x-sse-frames) and lists them as components.
	Frames []Frame
}

// Frame documents one kind of server-sent event: its event: name and the schema of its data.
type Frame struct {
	Event  string
	Schema *schema.Schema
}

// Header documents a response header.
type Header struct {
	Name        string         // the header name, for example Retry-After
	Description string         // what it means
	Schema      *schema.Schema // its value; nil means a string
}

// RetryAfter documents the Retry-After header of a 429 (docs/api.md §8).
var RetryAfter = Header{Name: "Retry-After", Description: "Whole seconds to wait before retrying.", Schema: schema.Integer()}

// WWWAuthenticate documents the header every 401 carries (docs/api.md §7).
var WWWAuthenticate = Header{Name: "WWW-Authenticate", Description: "Always Bearer.", Schema: schema.Const("Bearer")}

// JSONResponse documents a JSON body.
func JSONResponse(description string, s *schema.Schema) Response {
	return Response{Description: description, Schema: s}
}

// ErrorResponse documents a {"detail": "<sentence>"} body (ErrorSchema).
func ErrorResponse(description string, headers ...Header) Response {
	return Response{Description: description, Schema: ErrorSchema, Headers: headers}
}
