package shell

// Escape attempts against the interpreter's own doors (see confine.go).
// Each runs with the workspace in one host directory and a "host"
// directory beside it holding secrets; each checks the host side:
// nothing outside the workspace created, changed or read (no secret in
// the output), and no sh-interp-* left in any temp dir.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/internal/confinetest"
	"github.com/computerfs/computerfs/shell/coreutils"
)

const hostSecret = "HOST-SECRET-7f3a"

// interpTemps lists sh-interp-* names in the temp dirs the interpreter
// could fall back to.
func interpTemps(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "sh-interp-") {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

func TestConfinement(t *testing.T) {
	t.Setenv("CFS_DAEMON_SECRET", hostSecret)
	ws := t.TempDir()
	host := t.TempDir()
	os.WriteFile(filepath.Join(host, "sh-interp-secret"), []byte(hostSecret+"\n"), 0o600)
	os.WriteFile(filepath.Join(host, "secret.sh"), []byte("echo "+hostSecret+"\n"), 0o600)
	os.WriteFile(filepath.Join(host, "hostcmd"), []byte("#!/bin/sh\necho "+hostSecret+"\n"), 0o755)
	os.MkdirAll(filepath.Join(ws, "src"), 0o755)
	os.MkdirAll(filepath.Join(ws, "tmp"), 0o777)
	os.WriteFile(filepath.Join(ws, "src", "lib.sh"), []byte("greet() { echo hello \"$1\"; }\nfor i in 1 2; do :; done\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\n"), 0o644)

	tests := []struct {
		name   string
		script string
		env    map[string]string
		want   string // stdout, exactly, when set
		code   int
		mem    int64
		reason string // a prefix of Outcome.Reason
	}{
		{name: "TMPDIR write", script: `echo x > $TMPDIR/sh-interp-x; echo done`, env: map[string]string{"TMPDIR": host}, want: "done\n"},
		{name: "TMPDIR read", script: `cat < $TMPDIR/sh-interp-secret`, env: map[string]string{"TMPDIR": host}, code: 1},
		{name: "TMPDIR exported then bash -c", script: `export TMPDIR=` + host + `; bash -c "cat < ` + host + `/sh-interp-secret"`, code: 1},
		{name: "TMPDIR kept for the script", script: `echo $TMPDIR`, env: map[string]string{"TMPDIR": "/work/tmp"}, want: "/work/tmp\n"},
		{name: "no TMPDIR, /tmp", script: `echo x > /tmp/sh-interp-x; cat /tmp/sh-interp-x`, want: "x\n"},
		{name: "no TMPDIR, unset", script: `echo "[$TMPDIR]"`, want: "[]\n"},
		{name: "cmdsubst read", script: `x=$(< ` + host + `/sh-interp-secret); echo "[$x]"`, env: map[string]string{"TMPDIR": host}, want: "[]\n"},
		{name: "process substitution", script: `diff <(printf 'a\nb\n') <(printf 'a\nc\n')`, want: "2c2\n< b\n---\n> c\n", code: 1},
		{name: "process substitution, cat", script: `cat <(echo one) <(echo two)`, env: map[string]string{"TMPDIR": host}, want: "one\ntwo\n"},
		{name: "process substitution, read loop", script: `while read l; do echo "[$l]"; done < <(printf 'a\nb\n')`, want: "[a]\n[b]\n"},
		{name: "process substitution in eval", script: `eval 'cat <(echo hi)'`, want: "hi\n"},
		{name: "process substitution in bash -c", script: `bash -c 'wc -l < <(seq 3)'`, want: "3\n"},
		{name: "output process substitution", script: `echo x > >(cat)`, code: 2},
		{name: "tilde user", script: `echo ~root ~www-data ~nobody/x`, want: "~root ~www-data ~nobody/x\n"},
		{name: "tilde user in a pipeline", script: `echo ~root | cat`, want: "~root\n"},
		{name: "tilde user in braces", script: `echo {~root,~daemon}/x`, want: "~root/x ~daemon/x\n"},
		{name: "tilde user in eval", script: `eval 'echo ~root'`, want: "~root\n"},
		{name: "tilde user in trap", script: `trap 'echo ~root' EXIT; echo a`, want: "a\n~root\n"},
		{name: "tilde home", script: `echo ~ ~/x`, env: map[string]string{"HOME": "/home/agent"}, want: "/home/agent /home/agent/x\n"},
		{name: "tilde home default", script: `echo ~`, want: "/\n"},
		{name: "type -p on host PATH", script: `type -p hostcmd; echo $?`, env: map[string]string{"PATH": host}, want: "1\n"},
		{name: "command -v on host PATH", script: `command -v hostcmd; echo $?`, env: map[string]string{"PATH": host}, want: "1\n"},
		{name: "builtin type -p", script: `builtin type -p hostcmd; echo $?`, env: map[string]string{"PATH": host}, want: "1\n"},
		{name: "command builtin type", script: `command builtin type -P hostcmd; echo $?`, env: map[string]string{"PATH": host}, want: "1\n"},
		{name: "command -v ours", script: `command -v cat`, want: "/usr/bin/cat\n"},
		{name: "run host command", script: `hostcmd`, env: map[string]string{"PATH": host}, code: 127},
		{name: "run host command by path", script: host + `/hostcmd`, code: 127},
		{name: "source host file", script: `source ` + host + `/secret.sh`, code: 1},
		{name: "source from host PATH", script: `source secret.sh`, env: map[string]string{"PATH": host}, code: 1},
		{name: "source workspace file", script: `source /src/lib.sh; greet you`, want: "hello you\n"},
		{name: "source from workspace PATH", script: `PATH=/src; . lib.sh; greet me`, want: "hello me\n"},
		{name: "dot relative", script: `cd /src && . ./lib.sh && greet x`, want: "hello x\n"},
		{name: "cd host dir", script: `cd ` + host + ` && ls`, code: 1},
		{name: "read host path", script: `cat ` + host + `/secret.sh`, code: 1},
		{name: "dotdot", script: `cat ../../../../../../` + host + `/secret.sh`, code: 1},
		{name: "test -O", script: `[ -O /a.txt ] && echo own; [[ -G /a.txt ]] && echo grp; echo ok`, want: "own\ngrp\nok\n"},
		{name: "etc passwd", script: `cat /etc/passwd`, code: 1},
		{name: "proc environ", script: `cat /proc/self/environ`, code: 1},
		{name: "dev", script: `cat /dev/sda`, code: 1},
		{name: "virtual dev", script: `cat /dev/null; head -c3 /dev/zero | tr "\\0" z; echo; head -c8 /dev/urandom | wc -c; echo x > /dev/null; echo y | tee /dev/null`, want: "zzz\n8\ny\n"},
		{name: "daemon env", script: `env; echo "[$CFS_DAEMON_SECRET]"; declare -p`, reason: ""},
		{name: "alias", script: `alias x='echo ~root'; x`},
		{name: "command -v success is no panic", script: `command -v cat >/dev/null`, want: ""},
		{name: "memory: doubling", script: `x=a; for i in $(seq 40); do x=$x$x; done; echo no`, mem: 16 << 20, code: 137, reason: "memory limit"},
		{name: "memory: command substitution", script: `x=$(seq 1 10000000); echo no`, mem: 8 << 20, code: 137, reason: "memory limit"},
		{name: "memory: array", script: `a=(xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx); for i in $(seq 24); do a=("${a[@]}" "${a[@]}"); done; echo no`, mem: 4 << 20, code: 137, reason: "memory limit"},
	}
	before := confinetest.HostState(host)
	tmps := []string{"/tmp", os.TempDir(), host}
	tempsBefore := interpTemps(tmps...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var out, errb bytes.Buffer
			env := map[string]string{"PATH": "/usr/bin:/bin"}
			for k, v := range tc.env {
				env[k] = v
			}
			o := Run(ctx, tc.script, Options{FS: coreutils.DirFS{Root: ws}, Env: env, Stdout: &out, Stderr: &errb, MemoryBytes: tc.mem, Timeout: 30 * time.Second})
			if strings.Contains(out.String()+errb.String(), hostSecret) {
				t.Errorf("a host secret reached the script:\n%s%s", out.String(), errb.String())
			}
			if strings.Contains(errb.String(), "internal error") || strings.Contains(errb.String(), "panic") {
				t.Errorf("stderr: %s", errb.String())
			}
			if tc.want != "" || tc.code == 0 && tc.reason == "" && tc.name != "daemon env" && tc.name != "alias" {
				if out.String() != tc.want {
					t.Errorf("stdout %q, want %q (stderr %q)", out.String(), tc.want, errb.String())
				}
			}
			if o.ExitCode != tc.code && tc.name != "daemon env" && tc.name != "alias" {
				t.Errorf("exit %d, want %d (stderr %q, reason %q)", o.ExitCode, tc.code, errb.String(), o.Reason)
			}
			if !strings.HasPrefix(o.Reason, tc.reason) {
				t.Errorf("reason %q, want it to start %q", o.Reason, tc.reason)
			}
			if tc.name == "alias" && out.String() != "~root\n" && !strings.Contains(errb.String(), "not found") {
				t.Errorf("alias: stdout %q stderr %q", out.String(), errb.String())
			}
			if after := interpTemps(tmps...); len(after) != len(tempsBefore) {
				t.Errorf("temp files left: %v (before: %v)", after, tempsBefore)
			}
		})
	}
	for _, c := range confinetest.Changes(before, confinetest.HostState(host)) {
		t.Errorf("the host: %s", c)
	}
}
