// Command testsummary reads `go test -json` on standard input, prints each package's result
// and the output of every failed test, and ends with the line "N passed, N failed, N skipped".
// With -forbid-skip TEXT it fails the run when a test skipped with a message containing TEXT:
// scripts/test.sh uses it so that tests needing DynamoDB Local can never skip silently there.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	forbid := flag.String("forbid-skip", "", "fail when a skipped test's output contains this text")
	flag.Parse()

	outputs := map[string]*strings.Builder{} // package/test -> output
	var passed, failed, skipped int
	var forbidden, skips []string
	pkgFailed := false

	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Println(string(line)) // build errors and other plain output
			continue
		}
		id := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			b := outputs[id]
			if b == nil {
				b = &strings.Builder{}
				outputs[id] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				printPackage(e, outputs[id])
				if e.Action == "fail" {
					pkgFailed = true
				}
				continue
			}
			switch e.Action {
			case "pass":
				passed++
			case "fail":
				failed++
				fmt.Printf("--- FAIL: %s (%s)\n%s", e.Test, e.Package, text(outputs[id]))
			case "skip":
				skipped++
				skips = append(skips, fmt.Sprintf("--- SKIP: %s (%s): %s", e.Test, e.Package, skipReason(text(outputs[id]))))
				if *forbid != "" && strings.Contains(text(outputs[id]), *forbid) {
					forbidden = append(forbidden, id)
				}
			}
			delete(outputs, id)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	for _, line := range skips {
		fmt.Println(line)
	}
	sort.Strings(forbidden)
	for _, id := range forbidden {
		fmt.Printf("--- SKIPPED BUT REQUIRED: %s\n", id)
	}
	fmt.Printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 || pkgFailed || len(forbidden) > 0 {
		os.Exit(1)
	}
}

func printPackage(e event, out *strings.Builder) {
	switch e.Action {
	case "pass":
		fmt.Printf("ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Printf("?   \t%s\t[no test files]\n", e.Package)
	case "fail":
		// A package that fails outside any test (build error, panic in init, TestMain) says why here.
		fmt.Printf("FAIL\t%s\t%.3fs\n%s", e.Package, e.Elapsed, text(out))
	}
}

func text(b *strings.Builder) string {
	if b == nil {
		return ""
	}
	return b.String()
}

// skipReason returns the last line a skipped test logged: t.Skip's message.
func skipReason(out string) string {
	var last string
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "=== ") && !strings.HasPrefix(line, "--- SKIP") {
			last = line
		}
	}
	return last
}
