package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/roadevents/roadevents/shared/schema"
)

// readJSON reads the request body under the content-type, size and depth rules. present is
// false for an empty body or a JSON null (FastAPI then reports the body missing). err is an
// *Error (413, 415, 400 for an unreadable stream) or schema.Errors holding one json_invalid.
//
// Decisions the wire conventions (docs/api.md §10.1) leave open, taken here:
//   - Content-Type may be absent (FastAPI reads such a body as JSON); if present it must be
//     application/json or application/*+json, charset utf-8 if given, else 415.
//   - The body must be valid UTF-8; RFC 8259 requires it, and Go would otherwise replace
//     bad bytes silently.
//   - Duplicate member names in one object are rejected (json_invalid): RFC 8259 leaves
//     them undefined, and parsers that disagree on which copy wins make a payload mean
//     different things to the validator and to whatever reads it later.
//   - The json_invalid loc is ["body", <byte offset>], ctx.error says what is wrong.
func readJSON(r *http.Request, limit int64, maxDepth int) (v any, present bool, err error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, perr := mime.ParseMediaType(ct)
		jsonType := perr == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			jsonType = false
		}
		if !jsonType {
			return nil, false, NewError(http.StatusUnsupportedMediaType, "Unsupported media type: send the body as application/json", nil)
		}
	}
	tooLarge := NewError(http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body too large: the limit is %d bytes", limit), nil)
	if r.ContentLength > limit {
		return nil, false, tooLarge
	}
	if r.Body == nil {
		return nil, false, nil
	}
	data, rerr := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if rerr != nil {
		return nil, false, NewError(http.StatusBadRequest, "The request body could not be read", fmt.Errorf("read body: %w", rerr))
	}
	if int64(len(data)) > limit {
		return nil, false, tooLarge
	}
	if len(data) == 0 {
		return nil, false, nil
	}
	v, offset, problem := parseJSON(data, maxDepth)
	if problem != "" {
		return nil, false, schema.Errors{{
			Type:  schema.ErrJSONInvalid,
			Loc:   []any{"body", offset},
			Msg:   "JSON decode error",
			Input: map[string]any{},
			Ctx:   map[string]any{"error": problem},
		}}
	}
	return v, v != nil, nil
}

// parseJSON decodes data into maps, slices, json.Number, strings, bools and nils, enforcing
// the depth limit and unique member names. On failure it returns the byte offset and a
// description of the problem.
func parseJSON(data []byte, maxDepth int) (v any, offset int, problem string) {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return nil, i, "invalid UTF-8"
	}
	if v, ok := parseWellFormed(data, maxDepth); ok {
		return v, 0, ""
	}
	return parseTokens(data, maxDepth)
}

// parseTokens is parseJSON token by token, which finds where valid UTF-8 text breaks a rule.
func parseTokens(data []byte, maxDepth int) (v any, offset int, problem string) {
	p := jsonParser{dec: json.NewDecoder(bytes.NewReader(data)), size: len(data), max: maxDepth}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err != nil {
		var pe *parseError
		if errors.As(err, &pe) {
			return nil, pe.offset, pe.msg
		}
		return nil, len(data), err.Error()
	}
	rest := int(p.dec.InputOffset())
	for rest < len(data) && isSpace(data[rest]) {
		rest++
	}
	if rest < len(data) {
		return nil, rest, "extra data after the JSON value"
	}
	return v, 0, ""
}

// parseWellFormed is parseJSON's fast path, for the bodies nearly every request sends: it
// decodes data in one call to the standard decoder, several times faster than the token by
// token parser below (docs/performance.md §2), and then checks the two rules the decoder
// does not: the depth limit and unique member names, by counting the members of the text
// against those of the decoded maps (a duplicate name keeps one map entry for two members). It reports false for anything else, and the token parser
// then finds the problem and its offset.
func parseWellFormed(data []byte, maxDepth int) (any, bool) {
	members, depth := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case ':':
			members++
		case '{', '[':
			if depth++; depth > maxDepth {
				return nil, false
			}
		case '}', ']':
			depth--
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	for rest := data[dec.InputOffset():]; len(rest) > 0; rest = rest[1:] {
		if !isSpace(rest[0]) {
			return nil, false
		}
	}
	return v, countMembers(v) == members
}

// countMembers is the number of members of every object in v.
func countMembers(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		n += len(v)
		for _, item := range v {
			n += countMembers(item)
		}
	case []any:
		for _, item := range v {
			n += countMembers(item)
		}
	}
	return n
}

type parseError struct {
	offset int
	msg    string
}

// Error describes the syntax problem with its offset.
func (e *parseError) Error() string { return fmt.Sprintf("offset %d: %s", e.offset, e.msg) }

type jsonParser struct {
	dec  *json.Decoder
	size int
	max  int
}

func (p *jsonParser) token() (json.Token, error) {
	tok, err := p.dec.Token()
	if err == nil {
		return tok, nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, &parseError{offset: int(se.Offset), msg: se.Error()}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return nil, &parseError{offset: p.size, msg: "unexpected end of JSON input"}
	default:
		return nil, &parseError{offset: int(p.dec.InputOffset()), msg: err.Error()}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // string, json.Number, bool or nil
	}
	if delim != '{' && delim != '[' {
		return nil, &parseError{offset: int(p.dec.InputOffset()) - 1, msg: fmt.Sprintf("unexpected %q", rune(delim))}
	}
	if depth+1 > p.max {
		return nil, &parseError{offset: int(p.dec.InputOffset()) - 1, msg: fmt.Sprintf("nesting deeper than %d levels", p.max)}
	}
	if delim == '[' {
		arr := []any{}
		for p.dec.More() {
			item, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, item)
		}
		if _, err := p.token(); err != nil {
			return nil, err
		}
		return arr, nil
	}
	obj := map[string]any{}
	for p.dec.More() {
		keyTok, err := p.token()
		if err != nil {
			return nil, err
		}
		key, ok := keyTok.(string)
		if !ok {
			return nil, &parseError{offset: int(p.dec.InputOffset()), msg: "expected a member name"}
		}
		if _, dup := obj[key]; dup {
			return nil, &parseError{offset: int(p.dec.InputOffset()), msg: fmt.Sprintf("duplicate member name %q", key)}
		}
		val, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		obj[key] = val
	}
	if _, err := p.token(); err != nil {
		return nil, err
	}
	return obj, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func marshalBody(v any) ([]byte, error) {
	return json.Marshal(v)
}
