package config

import (
	"fmt"
	"regexp"
)

// Export names the publisher of the open-data exports (docs/interop.md §7).
type Export struct {
	// Publisher is the name in WZDx/TDx feed_info (ROADEVENTS_EXPORT_PUBLISHER).
	Publisher string
	// Country is DATEX II's publicationCreator country, two capital letters
	// (ROADEVENTS_EXPORT_COUNTRY); EU for a network that spans countries.
	Country string
}

// DefaultExport is Export when no variable says otherwise.
var DefaultExport = Export{Publisher: "Road events network", Country: "EU"}

var countryCode = regexp.MustCompile(`^[A-Z]{2}$`)

// readExport applies the export variables of getenv.
func (c *Config) readExport(getenv func(string) string) error {
	setString(&c.Export.Publisher, getenv("ROADEVENTS_EXPORT_PUBLISHER"))
	setString(&c.Export.Country, getenv("ROADEVENTS_EXPORT_COUNTRY"))
	if len(c.Export.Publisher) > 100 {
		return fmt.Errorf("config: ROADEVENTS_EXPORT_PUBLISHER: at most 100 characters")
	}
	if !countryCode.MatchString(c.Export.Country) {
		return fmt.Errorf("config: ROADEVENTS_EXPORT_COUNTRY=%q: want two capital letters (ISO 3166-1 alpha-2, or EU)", c.Export.Country)
	}
	return nil
}
