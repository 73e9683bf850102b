// Command generate writes the OpenAPI document of every route group (app.Document) to the file
// its argument names; `go generate ./shared/app/openapidoc` runs it (docs/development.md §5).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/roadevents/roadevents/shared/app"
	"github.com/roadevents/roadevents/shared/store/embedded"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: generate FILE")
		os.Exit(2)
	}
	if err := generate(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

// generate builds the document on a throwaway embedded store, which building the routes does
// not read, and writes it to file.
func generate(file string) error {
	dir, err := os.MkdirTemp("", "openapidoc")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := embedded.Open(filepath.Join(dir, "document.db"), embedded.Options{SweepInterval: -1})
	if err != nil {
		return err
	}
	doc, err := app.Document(st)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.WriteFile(file, doc, 0o644)
}
