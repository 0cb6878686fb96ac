package backends

import "testing"

// FuzzCommandsOf: the router's parse of a script (wrappers such as xargs
// and env unwrapped) never panics and the command names it finds are
// non-empty; the ES module test never panics either.
func FuzzCommandsOf(f *testing.F) {
	for _, s := range []string{"grep -rn TODO . | sort | head", "for i in 1 2; do echo $i; done", "x=$(ls); $x", "a && b || c", "'unterminated",
		"find . | xargs -I{} -n 1 gofmt -l {}", "env -u X A=1 timeout -s KILL 5 nice -n 3 make", "command -v git", "export default () => 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script string) {
		isESModule(script)
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
