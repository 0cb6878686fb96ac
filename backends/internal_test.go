package backends

import (
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/pluginapi/pb"
)

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"shell": true, "js": true, "a_b-9": true, "container2": true,
		"Shell": false, "a.b": false, "a b": false, "a/b": false, "é": false,
	} {
		if got := validID(id); got != want {
			t.Errorf("validID(%q) = %v", id, got)
		}
	}
}

func TestResolveLimits(t *testing.T) {
	desc := &pb.Description{
		DefaultLimits: &pb.Limits{TimeoutMs: 1000, OutputBytes: 100, InputBytes: 7},
		MaxLimits:     &pb.Limits{TimeoutMs: 5000, OutputBytes: 1000, MemoryBytes: 1 << 20},
	}
	tests := []struct {
		name string
		desc *pb.Description
		req  Request
		want *pb.Limits
	}{
		{"defaults", desc, Request{}, &pb.Limits{TimeoutMs: 1000, OutputBytes: 100, InputBytes: 7, MemoryBytes: 1 << 20}},
		{"request within max", desc, Request{Timeout: 2 * time.Second, OutputLimit: 500}, &pb.Limits{TimeoutMs: 2000, OutputBytes: 500, InputBytes: 7, MemoryBytes: 1 << 20}},
		{"request over max", desc, Request{Timeout: time.Hour, OutputLimit: 1 << 40}, &pb.Limits{TimeoutMs: 5000, OutputBytes: 1000, InputBytes: 7, MemoryBytes: 1 << 20}},
		{"nothing described", &pb.Description{}, Request{}, &pb.Limits{TimeoutMs: defaultTimeout.Milliseconds(), OutputBytes: defaultOutputLimit}},
		{"host bounds", &pb.Description{}, Request{Timeout: 1000 * time.Hour, OutputLimit: 1 << 40}, &pb.Limits{TimeoutMs: hardMaxTimeout.Milliseconds(), OutputBytes: hardMaxOutput}},
		{"negative defaults", &pb.Description{DefaultLimits: &pb.Limits{TimeoutMs: -1, OutputBytes: -5}}, Request{}, &pb.Limits{TimeoutMs: defaultTimeout.Milliseconds(), OutputBytes: defaultOutputLimit}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveLimits(tc.desc, &tc.req)
			if got.String() != tc.want.String() {
				t.Errorf("resolveLimits = %v, want %v", got, tc.want)
			}
		})
	}
	// The description's own limits are not modified.
	resolveLimits(desc, &Request{Timeout: 3 * time.Second})
	if desc.DefaultLimits.TimeoutMs != 1000 {
		t.Errorf("resolveLimits modified the description: %v", desc.DefaultLimits)
	}
}

func TestCommandsOf(t *testing.T) {
	tests := []struct {
		script  string
		want    string
		certain bool
		err     bool
	}{
		{"echo hi", "echo", true, false},
		{"ls -l | wc -l && cat x; echo", "cat,echo,ls,wc", true, false},
		{"for f in *; do grep x $f; done", "grep", true, false},
		{"$cmd arg", "", false, false},
		{"echo $(date)", "date,echo", true, false},
		{"", "", true, false},
		{"echo 'unterminated", "", false, true},
		// Wrappers run the command in their arguments.
		{"find . -name '*.go' | xargs gofmt -l", "find,gofmt,xargs", true, false},
		{"grep -rl x . | xargs -I{} git log -1 {}", "git,grep,xargs", true, false},
		{"seq 9 | xargs -n 3 -P 2 echo", "echo,seq,xargs", true, false},
		{"ls | xargs", "ls,xargs", true, false},
		{"env -u HOME FOO=1 make test", "env,make", true, false},
		{"timeout 5 npm test", "npm,timeout", true, false},
		{"timeout -s KILL 5s go build", "go,timeout", true, false},
		{"command -v git", "command", true, false},
		{"command git status", "command,git", true, false},
		{"nice -n 10 cargo build", "cargo,nice", true, false},
		{"xargs $tool", "xargs", false, false},
	}
	for _, tc := range tests {
		names, certain, err := commandsOf(tc.script)
		if (err != nil) != tc.err || (err == nil && (strings.Join(names, ",") != tc.want || certain != tc.certain)) {
			t.Errorf("commandsOf(%q) = %v, %v, %v", tc.script, names, certain, err)
		}
	}
}

func TestIsESModule(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"export default (i) => i.n * 2", true},
		{"export default async function (i) {\n  return 1\n}", true},
		{"  export async function f() {}", true},
		{"import { readFile } from 'node:fs/promises';\nexport default () => 1", true},
		{"import * as path from \"node:path\"", true},
		{"import './side-effect.js'", true},
		{"export default_value=1", false},
		{"export PATH=/bin; echo $PATH", false},
		{"echo export default", false},
		{"grep -r 'export default' src", false},
		{"import foo", false}, // ImageMagick's import, say
		{"// a module\n/* sums */\nexport default (i) => 1", true},
		{"const xs = [1, 2];\nexport default () => xs.length", true},
		{"cat > a.js <<'EOF'\nexport default () => 1\nEOF\nnode a.js", false},
		{"mkdir -p src\nprintf 'import x from \"y\"' > src/a.js", false},
	}
	for _, tc := range tests {
		if got := isESModule(tc.src); got != tc.want {
			t.Errorf("isESModule(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}
