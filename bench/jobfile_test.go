package bench

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseJobFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Job
	}{
		{
			name: "global defaults",
			in:   "[global]\nrw=read\nbs=1m\nsize=64m\nnumjobs=4\n\n[seq]\n",
			want: []Job{{Name: "seq", RW: Read, BS: 1 << 20, Size: 64 << 20, NumJobs: 4, IODepth: 1}},
		},
		{
			name: "job overrides global; comments; CRLF; spaces",
			in:   "; fio comment\r\n# another\r\n[global]\r\nrw = randread\r\nsize=16M\r\n\r\n[a]\r\n  bs = 4KiB  \r\nfsync=8\r\ndirect=1\r\nruntime=500ms\r\n[b]\r\nrw=randwrite\r\niodepth=1\r\n",
			want: []Job{
				{Name: "a", RW: RandRead, BS: 4096, Size: 16 << 20, NumJobs: 1, Fsync: 8, Direct: true, Runtime: 500 * time.Millisecond, IODepth: 1},
				{Name: "b", RW: RandWrite, BS: 4096, Size: 16 << 20, NumJobs: 1, IODepth: 1},
			},
		},
		{
			name: "no global; default bs 4k; runtime units",
			in:   "[w]\nrw=write\nsize=1g\nruntime=10\n[x]\nrw=read\nsize=8k\nruntime=2m\n",
			want: []Job{
				{Name: "w", RW: Write, BS: 4096, Size: 1 << 30, NumJobs: 1, Runtime: 10 * time.Second, IODepth: 1},
				{Name: "x", RW: Read, BS: 4096, Size: 8 << 10, NumJobs: 1, Runtime: 2 * time.Minute, IODepth: 1},
			},
		},
		{
			name: "a later global applies only to later jobs",
			in:   "[global]\nsize=1m\nrw=read\n[a]\n[global]\nbs=64k\n[b]\n",
			want: []Job{
				{Name: "a", RW: Read, BS: 4096, Size: 1 << 20, NumJobs: 1, IODepth: 1},
				{Name: "b", RW: Read, BS: 64 << 10, Size: 1 << 20, NumJobs: 1, IODepth: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jf, err := ParseJobFile("t.fio", strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if jf.Name != "t" {
				t.Errorf("name %q, want t", jf.Name)
			}
			if !reflect.DeepEqual(jf.Jobs, tt.want) {
				t.Errorf("got  %+v\nwant %+v", jf.Jobs, tt.want)
			}
		})
	}
}

func TestParseJobFileErrors(t *testing.T) {
	tests := []struct {
		in   string
		line int
		msg  string
	}{
		{"[a]\nrw=read\nsize=1m\niodepth=4\n", 4, "only iodepth=1 is supported"},
		{"rw=read\n", 1, "outside any section"},
		{"[a]\nrw=readwrite\nsize=1m\n", 2, "want read, write, randread or randwrite"},
		{"[a]\nrw=read\nsize=lots\n", 3, `invalid size "lots"`},
		{"[a]\nrw=read\nsize=0\n", 3, "above 0"},
		{"[a]\nrw=read\nsize=1m\nbs=0\n", 4, "block size"},
		{"[a]\nrw=read\nsize=1m\nioengine=libaio\n", 4, `unknown key "ioengine"`},
		{"[a]\nrw=read\nsize=1m\ngroup_reporting\n", 4, "want key=value"},
		{"[a]\nrw=read\nsize=1m\nnumjobs=0\n", 4, "from 1 to"},
		{"[a]\nrw=read\nsize=1m\ndirect=yes\n", 4, "want 0 or 1"},
		{"[a]\nrw=read\nsize=1m\nfsync=-1\n", 4, "whole number"},
		{"[a]\nrw=read\nsize=1m\nruntime=soon\n", 4, "invalid duration"},
		{"[a]\nrw=read\nsize=1m\nbs=\n", 4, "empty value"},
		{"[a\nrw=read\n", 1, "no closing ]"},
		{"[]\n", 1, "empty section name"},
		{"[a/b]\nrw=read\nsize=1m\n", 1, "section name"},
		{"[a]\nrw=read\nsize=1m\n\n[a]\nrw=write\nsize=1m\n", 5, `job "a" already defined on line 1`},
		{"# x\n[a]\nsize=1m\n", 2, `job "a": no rw`},
		{"[a]\nrw=write\n[b]\nrw=read\nsize=1m\n", 1, `job "a": no size`},
		{"[a]\nrw=write\nsize=1k\nbs=4k\n", 1, "smaller than bs"},
		{"[global]\nrw=read\nsize=1m\n", 0, "no jobs"},
		{"", 0, "no jobs"},
		{"[a]\nrw=read\nsize=99999999999999999999\n", 3, "invalid size"},
		{"[a]\nrw=read\nsize=9999999999999t\n", 3, "too large"},
	}
	for _, tt := range tests {
		_, err := ParseJobFile("bad.fio", strings.NewReader(tt.in))
		if err == nil {
			t.Errorf("%q: parsed, want an error with %q", tt.in, tt.msg)
			continue
		}
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v is not a *ParseError", tt.in, err)
			continue
		}
		if pe.Line != tt.line || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%q: got line %d %q, want line %d and %q", tt.in, pe.Line, err, tt.line, tt.msg)
		}
		if tt.line > 0 && !strings.HasPrefix(err.Error(), "bad.fio:") {
			t.Errorf("%q: error %q does not start with file:line", tt.in, err)
		}
	}
}

func TestBuiltinJobFiles(t *testing.T) {
	srcs, err := LoadJobFiles(nil)
	if err != nil {
		t.Fatal(err)
	}
	var seqR, seqW, randR, randW, small, big, parallel bool
	for _, s := range srcs {
		for _, j := range s.Job.Jobs {
			switch j.RW {
			case Read:
				seqR = true
			case Write:
				seqW = true
			case RandRead:
				randR = true
			case RandWrite:
				randW = true
			}
			small = small || j.BS == 4096
			big = big || j.BS == 1<<20
			parallel = parallel || j.NumJobs >= 4
		}
	}
	if !(seqR && seqW && randR && randW && small && big && parallel) {
		t.Errorf("built-in job files miss a case: seq read %v, seq write %v, rand read %v, rand write %v, 4k %v, 1m %v, numjobs>=4 %v", seqR, seqW, randR, randW, small, big, parallel)
	}
}

func FuzzParseJobFile(f *testing.F) {
	srcs, err := LoadJobFiles(nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range srcs {
		f.Add(string(s.Text))
	}
	f.Add("[global]\nrw=randread\nbs=4k\n[a]\nsize=1m\nruntime=1h\n[b]\nrw=write\nsize=2m\nfsync=3\ndirect=1\n")
	f.Add("[a]\nrw=read\nsize=1m\niodepth=2\n")
	f.Add("[a b]\r\nrw = write\r\nsize=5\r\nbs=5\r\n")
	f.Fuzz(func(t *testing.T, in string) {
		jf, err := ParseJobFile("fuzz.fio", strings.NewReader(in))
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *ParseError", err)
			}
			return
		}
		if len(jf.Jobs) == 0 {
			t.Fatal("parsed with no jobs")
		}
		for _, j := range jf.Jobs {
			if j.Name == "" || j.BS <= 0 || j.Size < j.BS || j.NumJobs < 1 || j.IODepth != 1 || j.Fsync < 0 || j.Runtime < 0 {
				t.Fatalf("invalid job parsed: %+v", j)
			}
			switch j.RW {
			case Read, Write, RandRead, RandWrite:
			default:
				t.Fatalf("invalid rw %q", j.RW)
			}
		}
		// What String writes parses back to the same jobs.
		again, err := ParseJobFile("fuzz.fio", strings.NewReader(jf.String()))
		if err != nil {
			t.Fatalf("reparse of\n%s\nfailed: %v", jf.String(), err)
		}
		if !reflect.DeepEqual(again.Jobs, jf.Jobs) {
			t.Fatalf("round trip changed the jobs:\n%+v\n%+v", jf.Jobs, again.Jobs)
		}
	})
}
