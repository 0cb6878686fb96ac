package plugincheck

import (
	"os"
	"strings"
	"testing"
)

func TestParseProbes(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{`{"seq": {"argv": ["seq", "{n}"]}, "exit_codes": [0, 7]}`, ""},
		{`{"seq": {"argv": []}}`, "seq: no argv"},
		{`{"hello": {"argv": {"stdout": "x"}}}`, "hello.argv: no argv"},
		{`{"sleeep": {"argv": ["x"]}}`, "unknown field"},
		{`{"exit_codes": [256]}`, "not a status"},
		{`{} {}`, "more than one"},
	} {
		_, err := ParseProbes([]byte(tc.in))
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.in, err, tc.err)
		}
	}
	// The examples' files parse.
	for _, f := range []string{"testdata/fault.check.json", "../examples/python-plugin/check.json", "../examples/node-plugin/check.json"} {
		if _, err := LoadProbes(f); err != nil {
			t.Error(err)
		}
	}
	// Placeholders.
	p := &Probe{Argv: []string{"write", "{path}", "{text}{n}"}}
	if got := p.fill(map[string]string{"path": "a/b", "text": "t", "n": "3"}); strings.Join(got, " ") != "write a/b t3" {
		t.Errorf("fill: %q", got)
	}
}

// FuzzParseProbes: a probes file is the plugin author's input; no input
// may panic the decoder or the merge and fill that follow it.
func FuzzParseProbes(f *testing.F) {
	for _, name := range []string{"testdata/fault.check.json", "../examples/python-plugin/check.json"} {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"hello": {"js-module": {"argv": ["{n}{code}"], "stdout": ""}}, "exit_codes": [1]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseProbes(b)
		if err != nil {
			return
		}
		m := merge(defaults([]string{"argv", "script", "js-module"}), p)
		for _, pr := range []*Probe{m.Seq, m.SeqStderr, m.Cat, m.Exit, m.Sleep, m.Read, m.Write} {
			if pr != nil {
				pr.fill(map[string]string{"n": "1", "code": "0", "path": "p", "text": "t"})
			}
		}
	})
}
