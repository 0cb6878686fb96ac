package backends

import "testing"

// FuzzCommandsOf: the router's parse of a script never panics, and the
// command names it finds are non-empty.
func FuzzCommandsOf(f *testing.F) {
	for _, s := range []string{"grep -rn TODO . | sort | head", "for i in 1 2; do echo $i; done", "x=$(ls); $x", "a && b || c", "'unterminated"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		names, _, err := commandsOf(script)
		if err != nil {
			return
		}
		for _, n := range names {
			if n == "" {
				t.Fatalf("an empty command name from %q", script)
			}
		}
	})
}
