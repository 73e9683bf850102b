package apitest

// UnprintableNames are names, labels and display names the service refuses with a 422
// value_error (docs/api.md §11.2), by what is wrong with each: control characters that break a
// line or a terminal, marks that reverse the text around them, and nothing visible at all.
var UnprintableNames = map[string]string{
	"NUL":                     "Fleet\x00",
	"BEL":                     "Fleet\a",
	"ESC sequence":            "\x1b[31mFleet",
	"CR LF header injection":  "Fleet\r\nBcc: all@example.com",
	"LF":                      "Fleet\nTeam",
	"tab":                     "Fleet\tTeam",
	"DEL":                     "Fleet\x7f",
	"C1 next line":            "Fleet\u0085Team",
	"line separator":          "Fleet\u2028Team",
	"right-to-left override":  "invoice\u202Efdp.exe",
	"left-to-right embedding": "\u202AFleet",
	"right-to-left isolate":   "\u2067Fleet\u2069",
	"right-to-left mark":      "Fleet\u200F",
	"left-to-right mark":      "\u200EFleet",
	"spaces only":             "   ",
	"ideographic space only":  "\u3000",
	"zero-width space only":   "\u200B",
}

// PrintableNames are names the same rule accepts: accents, other scripts, emoji with their
// joiners, inner spaces.
var PrintableNames = []string{
	"Société Générale d'Entreprises",
	"東京交通株式会社",
	"شركة النقل",
	"Fleet 👩\u200d👩\u200d👧 🚚",
	"Ada  Lovelace",
}
