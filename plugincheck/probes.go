package plugincheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// A Probe is a command the plugin runs for a check: its kind and its
// argv, with placeholders ({n}, {code}, {path}, {text}) replaced before
// it is sent. An empty kind is the plugin's first accepted kind.
type Probe struct {
	Kind string   `json:"kind,omitempty"`
	Argv []string `json:"argv"`
}

// Hello is the probe of one kind: it prints Stdout exactly and exits 0.
type Hello struct {
	Argv   []string `json:"argv"`
	Stdout string   `json:"stdout"`
}

// Probes are the commands the checks run. A plugin that accepts
// "script", "js-module" or "argv" (POSIX tools: echo, seq, cat, sh,
// sleep) gets defaults; any other plugin's author writes them, in a JSON
// file of this shape (PROTOCOL.md, "Checking a plugin"). A probe left
// out keeps its default.
type Probes struct {
	// Hello has one probe per accepted kind.
	Hello map[string]Hello `json:"hello,omitempty"`
	// Seq prints the numbers 1 to {n}, one per line, on stdout.
	Seq *Probe `json:"seq,omitempty"`
	// SeqStderr prints the same on stderr.
	SeqStderr *Probe `json:"seq_stderr,omitempty"`
	// Cat copies stdin to stdout until stdin ends (plugins that list the
	// "stdin" feature).
	Cat *Probe `json:"cat,omitempty"`
	// Exit exits with status {code}, for each of ExitCodes.
	Exit      *Probe `json:"exit,omitempty"`
	ExitCodes []int  `json:"exit_codes,omitempty"`
	// Sleep runs until a signal ends it (at least 10 minutes).
	Sleep *Probe `json:"sleep,omitempty"`
	// Read prints the workspace file {path} (relative to the exec's
	// directory, the workspace's root) on stdout.
	Read *Probe `json:"read,omitempty"`
	// Write writes {text} (one word of letters and digits), a newline
	// allowed after it, to the workspace file {path}.
	Write *Probe `json:"write,omitempty"`
}

// LoadProbes reads a probes file.
func LoadProbes(path string) (*Probes, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("probes: %w", err)
	}
	p, err := ParseProbes(b)
	if err != nil {
		return nil, fmt.Errorf("probes %s: %w", path, err)
	}
	return p, nil
}

// ParseProbes decodes probes: one JSON object, no unknown field, every
// probe given with an argv.
func ParseProbes(b []byte) (*Probes, error) {
	var p Probes
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	for kind, h := range p.Hello {
		if len(h.Argv) == 0 {
			return nil, fmt.Errorf("hello.%s: no argv", kind)
		}
	}
	for name, pr := range map[string]*Probe{"seq": p.Seq, "seq_stderr": p.SeqStderr, "cat": p.Cat, "exit": p.Exit, "sleep": p.Sleep, "read": p.Read, "write": p.Write} {
		if pr != nil && len(pr.Argv) == 0 {
			return nil, fmt.Errorf("%s: no argv", name)
		}
	}
	for _, c := range p.ExitCodes {
		if c < 0 || c > 255 {
			return nil, fmt.Errorf("exit_codes: %d is not a status (0 to 255)", c)
		}
	}
	return &p, nil
}

func script(argv ...string) *Probe { return &Probe{Kind: "script", Argv: argv} }
func argv(argv ...string) *Probe   { return &Probe{Kind: "argv", Argv: argv} }
func module(src string) *Probe     { return &Probe{Kind: "js-module", Argv: []string{src}} }

var scriptHello = Hello{Argv: []string{"echo hello"}, Stdout: "hello\n"}
var argvHello = Hello{Argv: []string{"echo", "hello"}, Stdout: "hello\n"}
var moduleHello = Hello{Argv: []string{`console.log("hello")`}, Stdout: "hello\n"}

// defaults are the probes for a plugin that accepts kinds: a POSIX
// shell's if it accepts script, else JavaScript's for js-module, else
// POSIX tools' for argv.
func defaults(accepts []string) *Probes {
	p := &Probes{Hello: map[string]Hello{}, ExitCodes: []int{0, 3}}
	for _, k := range accepts {
		switch k {
		case "script":
			p.Hello[k] = scriptHello
		case "argv":
			p.Hello[k] = argvHello
		case "js-module":
			p.Hello[k] = moduleHello
		}
	}
	switch {
	case slices.Contains(accepts, "script"):
		p.Seq, p.SeqStderr = script("seq 1 {n}"), script("seq 1 {n} >&2")
		p.Cat, p.Exit, p.Sleep = script("cat"), script("exit {code}"), script("sleep 1000")
		p.Read, p.Write = script("cat {path}"), script("echo {text} > {path}")
	case slices.Contains(accepts, "js-module"):
		seq := `const a = []; for (let i = 1; i <= {n}; i++) a.push(i); console.%s(a.join("\n"))`
		p.Seq, p.SeqStderr = module(fmt.Sprintf(seq, "log")), module(fmt.Sprintf(seq, "error"))
		p.Exit = module(`process.exit({code})`)
		p.Sleep = module(`await new Promise(r => setTimeout(r, 1e9))`)
		p.Read = module(`import { readFile } from "node:fs/promises"; console.log((await readFile("{path}", "utf8")).replace(/\n$/, ""))`)
		p.Write = module(`import { writeFile } from "node:fs/promises"; await writeFile("{path}", "{text}\n")`)
	case slices.Contains(accepts, "argv"):
		p.Seq, p.SeqStderr = argv("seq", "1", "{n}"), argv("sh", "-c", "seq 1 {n} >&2")
		p.Cat, p.Exit, p.Sleep = argv("cat"), argv("sh", "-c", "exit {code}"), argv("sleep", "1000")
		p.Read, p.Write = argv("cat", "{path}"), argv("sh", "-c", "echo {text} > {path}")
	}
	return p
}

// merge lays the probes a plugin's author wrote over the defaults.
func merge(def, own *Probes) *Probes {
	if own == nil {
		return def
	}
	out := *def
	out.Hello = map[string]Hello{}
	for k, v := range def.Hello {
		out.Hello[k] = v
	}
	for k, v := range own.Hello {
		out.Hello[k] = v
	}
	for _, f := range []struct {
		dst **Probe
		src *Probe
	}{
		{&out.Seq, own.Seq}, {&out.SeqStderr, own.SeqStderr}, {&out.Cat, own.Cat}, {&out.Exit, own.Exit},
		{&out.Sleep, own.Sleep}, {&out.Read, own.Read}, {&out.Write, own.Write},
	} {
		if f.src != nil {
			*f.dst = f.src
		}
	}
	if len(own.ExitCodes) > 0 {
		out.ExitCodes = own.ExitCodes
	}
	return &out
}

// fill replaces a probe's placeholders.
func (p *Probe) fill(vars map[string]string) []string {
	out := make([]string, len(p.Argv))
	for i, a := range p.Argv {
		for k, v := range vars {
			a = strings.ReplaceAll(a, "{"+k+"}", v)
		}
		out[i] = a
	}
	return out
}

// seqText is what Seq prints for n.
func seqText(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strconv.Itoa(i))
		b.WriteByte('\n')
	}
	return b.String()
}
