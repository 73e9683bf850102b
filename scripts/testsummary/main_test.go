package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// run feeds input to the command built from this package and returns its output and exit code.
func run(t *testing.T, input string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestMainProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "TESTSUMMARY_MAIN=1")
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestMainProcess runs main when re-executed by run.
func TestMainProcess(t *testing.T) {
	if os.Getenv("TESTSUMMARY_MAIN") != "1" {
		t.Skip("helper process of the other tests; runs only as their child")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"testsummary"}, os.Args[i+1:]...)
			break
		}
	}
	main()
	os.Exit(0)
}

const pass = `{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0.5}
`

const skipForService = `{"Action":"output","Package":"p","Test":"TestDB","Output":"    db_test.go:9: DynamoDB Local not running: run ./scripts/test.sh\n"}
{"Action":"skip","Package":"p","Test":"TestDB"}
`

const fail = `{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:3: got 1; want 2\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`

func TestSummary(t *testing.T) {
	cases := []struct {
		name, input string
		args        []string
		wantCode    int
		wantOut     []string
	}{
		{"all pass", pass, nil, 0, []string{"ok  \tp", "1 passed, 0 failed, 0 skipped"}},
		{"a failure shows its output and fails the run", pass + fail, nil, 1,
			[]string{"--- FAIL: TestB (p)", "got 1; want 2", "1 passed, 1 failed, 0 skipped"}},
		{"a skip is listed with its reason", pass + skipForService, nil, 0,
			[]string{"--- SKIP: TestDB (p): db_test.go:9: DynamoDB Local not running", "1 passed, 0 failed, 1 skipped"}},
		{"a skip the script should have prevented fails the run", pass + skipForService, []string{"-forbid-skip", "scripts/test.sh"}, 1,
			[]string{"--- SKIPPED BUT REQUIRED: p TestDB"}},
		{"build errors pass through", "# p\n./x.go:1: undefined: y\n" + `{"Action":"fail","Package":"p","Elapsed":0}` + "\n", nil, 1,
			[]string{"./x.go:1: undefined: y", "FAIL\tp"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, code := run(t, c.input, c.args...)
			if code != c.wantCode {
				t.Errorf("exit code = %d; want %d\n%s", code, c.wantCode, out)
			}
			for _, w := range c.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
