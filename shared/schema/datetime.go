package schema

import (
	"time"
)

// ParseDateTime parses an RFC 3339 date-time as the service accepts it (docs/api.md §10.1):
// YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM), 'T' and 'Z' in either case, up to nine fraction
// digits. A date-time without an offset parses, but aware reports false: the caller decides
// (FormatDateTime rejects it with timezone_aware, as Pydantic's AwareDatetime does). problem
// is Pydantic's wording of a syntax error, empty when the text parsed.
func ParseDateTime(s string) (t time.Time, aware bool, problem string) {
	p := dtParser{s: s}
	year, ok := p.digits(4)
	if !ok {
		return time.Time{}, false, p.fail("invalid character in year")
	}
	if !p.char('-') {
		return time.Time{}, false, p.fail("invalid date separator, expected `-`")
	}
	month, ok := p.digits(2)
	if !ok {
		return time.Time{}, false, p.fail("invalid character in month")
	}
	if !p.char('-') {
		return time.Time{}, false, p.fail("invalid date separator, expected `-`")
	}
	day, ok := p.digits(2)
	if !ok {
		return time.Time{}, false, p.fail("invalid character in day")
	}
	if month < 1 || month > 12 {
		return time.Time{}, false, "month value is outside expected range of 1-12"
	}
	if day < 1 || day > daysIn(year, month) {
		return time.Time{}, false, "day value is outside expected range"
	}
	if p.done() {
		// A bare date is a naive midnight for Pydantic; it then fails the time-zone rule.
		return time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC), false, ""
	}
	if !p.char('T') && !p.char('t') {
		return time.Time{}, false, "invalid datetime separator, expected `T`"
	}
	hour, ok := p.digits(2)
	if !ok {
		return time.Time{}, false, p.fail("invalid character in hour")
	}
	if !p.char(':') {
		return time.Time{}, false, p.fail("invalid time separator, expected `:`")
	}
	minute, ok := p.digits(2)
	if !ok {
		return time.Time{}, false, p.fail("invalid character in minute")
	}
	if !p.char(':') {
		return time.Time{}, false, p.fail("invalid time separator, expected `:`")
	}
	second, ok := p.digits(2)
	if !ok {
		return time.Time{}, false, p.fail("invalid character in second")
	}
	if hour > 23 {
		return time.Time{}, false, "hour value is outside expected range of 0-23"
	}
	if minute > 59 {
		return time.Time{}, false, "minute value is outside expected range of 0-59"
	}
	if second > 59 {
		return time.Time{}, false, "second value is outside expected range of 0-59"
	}
	nanos := 0
	if p.char('.') {
		n := 0
		for !p.done() && isDigit(p.peek()) {
			if n == 9 {
				return time.Time{}, false, "second fraction value is more than 9 digits long"
			}
			nanos = nanos*10 + int(p.peek()-'0')
			p.i++
			n++
		}
		if n == 0 {
			return time.Time{}, false, p.fail("invalid character in second fraction")
		}
		for ; n < 9; n++ {
			nanos *= 10
		}
	}
	if p.done() {
		return time.Date(year, time.Month(month), day, hour, minute, second, nanos, time.UTC), false, ""
	}
	var loc *time.Location
	switch c := p.peek(); c {
	case 'Z', 'z':
		p.i++
		loc = time.UTC
	case '+', '-':
		p.i++
		oh, ok := p.digits(2)
		if !ok {
			return time.Time{}, false, p.fail("invalid timezone hour")
		}
		if !p.char(':') {
			return time.Time{}, false, p.fail("invalid timezone separator, expected `:`")
		}
		om, ok := p.digits(2)
		if !ok {
			return time.Time{}, false, p.fail("invalid timezone minute")
		}
		if oh > 23 || om > 59 {
			return time.Time{}, false, "timezone offset must be less than 24 hours"
		}
		off := oh*3600 + om*60
		if c == '-' {
			off = -off
		}
		loc = time.FixedZone("", off)
	default:
		return time.Time{}, false, "invalid timezone sign"
	}
	if !p.done() {
		return time.Time{}, false, "unexpected extra characters at the end of the input"
	}
	return time.Date(year, time.Month(month), day, hour, minute, second, nanos, loc), true, ""
}

// checkDateTime applies FormatDateTime to a string value.
func checkDateTime(s string, loc []any) *ValidationError {
	_, aware, problem := ParseDateTime(s)
	if problem != "" {
		return &ValidationError{Type: ErrDatetimeParsing, Loc: loc, Msg: "Input should be a valid datetime, " + problem,
			Input: s, Ctx: map[string]any{"error": problem}}
	}
	if !aware {
		return &ValidationError{Type: ErrTimezoneAware, Loc: loc, Msg: "Input should have timezone info", Input: s}
	}
	return nil
}

type dtParser struct {
	s     string
	i     int
	short bool // the text ended inside a field
}

func (p *dtParser) done() bool { return p.i >= len(p.s) }
func (p *dtParser) peek() byte { return p.s[p.i] }

func (p *dtParser) char(c byte) bool {
	if !p.done() && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *dtParser) digits(n int) (int, bool) {
	if p.i+n > len(p.s) {
		// Report a bad character before a short text, so "20x" is a bad year.
		for k := p.i; k < len(p.s); k++ {
			if !isDigit(p.s[k]) {
				return 0, false
			}
		}
		p.short = true
		return 0, false
	}
	v := 0
	for k := 0; k < n; k++ {
		c := p.s[p.i+k]
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v, true
}

// fail prefers "input is too short" when the text simply ended, as Pydantic does.
func (p *dtParser) fail(msg string) string {
	if p.short || p.done() {
		return "input is too short"
	}
	return msg
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}
