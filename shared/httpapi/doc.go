// Package httpapi is the HTTP plumbing every route group shares: a route registry that serves
// routes on net/http ServeMux patterns and generates /openapi.json from the same
// declarations, strict JSON body decoding, Pydantic-shaped validation errors, one place that
// turns errors into responses, and the request-id, access-log, panic and CORS middleware.
//
// # Using it
//
//	api := httpapi.New(httpapi.Config{Logger: logger, CORSOrigins: cfg.CORSOrigins})
//	api.Handle(httpapi.Route{
//		Method: "POST", Path: "/v1/events/{event_id}/signals",
//		OperationID: "signal_event", Tags: []string{"events"},
//		Security: []httpapi.Security{httpapi.SecurityAPIKey},
//		Params:   []schema.Param{schema.Path("event_id", schema.String())},
//		Body:     SignalIn, // a *schema.Schema
//		Responses: map[int]httpapi.Response{
//			200: httpapi.JSONResponse("Signal accepted", EventPublic),
//			404: httpapi.ErrorResponse("Unknown event"),
//			429: httpapi.ErrorResponse("Hourly signal ceiling", httpapi.RetryAfter),
//		},
//		Errors: httpapi.ErrorTable{{Err: ErrCeiling, Status: 429, Detail: "Hourly signal ceiling reached"}},
//		Handler: httpapi.JSON(http.StatusOK, func(r *httpapi.Request[SignalPayload]) (EventPublic, error) {
//			id := r.Params.String("event_id")
//			return signal(r.Context(), id, r.Body) // an error goes through Errors
//		}),
//	})
//	http.ListenAndServe(addr, api.Handler())
//	// GET /openapi.json: w.Write(api.OpenAPI())
//
// # What a request goes through
//
//  1. Request id: a sane incoming X-Request-Id is kept, otherwise one is generated; it is
//     echoed in the response and tags every log line (RequestID, Logger).
//  2. Access log: one JSON line per request through log/slog (request_id, method, path,
//     query, route, operation_id, status, duration_ms, bytes). Headers are never logged and
//     credential-looking query values (ticket, svc_/ses_/tmp_ values) are redacted.
//  3. Panic recovery: 500 {"detail":"Internal Server Error"}, the panic and stack logged.
//  4. CORS (docs/api.md §5): Access-Control-Allow-Origin * by default, or a configured list echoed
//     with Vary: Origin; every OPTIONS is 204 on any path, a preflight with the allowed methods
//     (GET, POST, OPTIONS), headers (Authorization, Content-Type, Last-Event-ID, X-Request-Id)
//     and Max-Age; Location, Retry-After, WWW-Authenticate and X-Request-Id are exposed.
//  5. Routing: no route for the path is 404 {"detail":"Not Found"}; the path under another
//     method is 405 {"detail":"Method Not Allowed"} with Allow (OPTIONS always in it).
//  6. Config.Middleware (authentication, metering), which can read the Route.
//  7. Validation: query and path parameters (schema.ParseParams) and the JSON body:
//     Content-Type other than JSON is 415; a body over the limit (DefaultMaxBodyBytes,
//     Route.MaxBodyBytes) is 413 {"detail"}; invalid, truncated or too deeply nested
//     (DefaultMaxDepth) JSON, duplicate member names or bad UTF-8 are 422 json_invalid at
//     ["body", <byte offset>]; an empty body is 422 missing at ["body"]; then the schema
//     reports every error at once (model_attributes_type, extra_forbidden, ...). Parameter
//     and body errors come in one 422 {"detail": [...]}.
//  8. The handler: a typed function (JSON) given the parameters and the body decoded into
//     its input type, or a HandlerFunc for answers that are not one JSON value.
//
// # Errors
//
// Handlers return errors (JSON, HandlerFunc) and WriteError answers them: an error the
// route's ErrorTable names becomes that row's status and sentence; an *Error carries the
// status, the public sentence and the internal cause (logged, never sent); schema.Errors from
// domain rules becomes a 422 list; anything else is a logged 500. Unauthorized builds the 401
// with WWW-Authenticate: Bearer that every /v1 credential failure carries (docs/api.md §7).
//
// # The document
//
// OpenAPI returns OpenAPI 3.1.0 JSON: info "Road Event Sharing Service" 1.0.0, one operation
// per non-hidden route with its parameters, request body, responses and security, and
// components holding every named schema, HTTPValidationError, ValidationError and HTTPError
// ({"detail": string}), and the security schemes APIKey, SessionToken, TempToken (HTTP bearer)
// and StreamTicket (apiKey in query "ticket").
package httpapi
