package coreutils

import (
	"strings"
	"testing"
)

// FuzzGetopt: any command line parses or is refused, never panics, and
// every operand it returns was an argument.
func FuzzGetopt(f *testing.F) {
	for _, s := range []string{"-n 3 file", "--lines=3 -- -x", "-abc -", "--li 2", "-n", "--bogus", "a -v b"} {
		f.Add(s)
	}
	spec := &optSpec{short: "n:vc", long: map[string]bool{"lines": true, "verbose": false, "lint": false}, alias: map[string]string{"lines": "n"}}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		_, operands, err := spec.parse(args)
		if err != nil {
			return
		}
		in := map[string]bool{}
		for _, a := range args {
			in[a] = true
		}
		for _, o := range operands {
			if !in[o] {
				t.Fatalf("operand %q was not an argument of %q", o, args)
			}
		}
	})
}
