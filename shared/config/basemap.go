package config

import (
	"fmt"
	"strings"
)

// Basemap is the map background the console draws events on (docs/console.md §5): raster
// tiles and the attribution their provider asks for.
type Basemap struct {
	// Tiles is the tile URL template, {z}/{x}/{y} (ROADEVENTS_BASEMAP_TILES); "none" for no
	// background: the map draws its events on a plain one.
	Tiles string
	// Attribution is shown in the map's corner (ROADEVENTS_BASEMAP_ATTRIBUTION).
	Attribution string
}

// DefaultBasemap is OpenStreetMap's standard tiles, with the attribution they require.
var DefaultBasemap = Basemap{
	Tiles:       "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
	Attribution: "© OpenStreetMap contributors",
}

// readBasemap applies the basemap variables of getenv.
func (c *Config) readBasemap(getenv func(string) string) error {
	if v := getenv("ROADEVENTS_BASEMAP_TILES"); v != "" {
		if v != "none" && (!strings.HasPrefix(v, "https://") && !strings.HasPrefix(v, "http://") ||
			!strings.Contains(v, "{z}") || !strings.Contains(v, "{x}") || !strings.Contains(v, "{y}")) {
			return fmt.Errorf("config: ROADEVENTS_BASEMAP_TILES=%q: want an http(s) URL template with {z}, {x} and {y}, or none", v)
		}
		c.Basemap.Tiles = v
	}
	setString(&c.Basemap.Attribution, getenv("ROADEVENTS_BASEMAP_ATTRIBUTION"))
	return nil
}
