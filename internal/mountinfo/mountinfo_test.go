package mountinfo

import (
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Entry
		ok   bool
	}{
		{`36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue`,
			Entry{Dev: "98:0", Root: "/mnt1", Point: "/mnt2", FSType: "ext3", Source: "/dev/root", Super: "rw,errors=continue"}, true},
		{`80 27 0:45 / /tmp/a\040b\134c rw,nosuid - fuse.computerfs /w\040s.cfs rw,user_id=0,group_id=0,allow_other`,
			Entry{Dev: "0:45", Root: "/", Point: `/tmp/a b\c`, FSType: "fuse.computerfs", Source: "/w s.cfs", Super: "rw,user_id=0,group_id=0,allow_other"}, true},
		{`80 27 0:45 / /x\040 rw - tmpfs tmpfs rw`, Entry{Dev: "0:45", Root: "/", Point: "/x ", FSType: "tmpfs", Source: "tmpfs", Super: "rw"}, true},
		{`80 27 0:45 / /x\04 rw - tmpfs tmpfs rw`, Entry{Dev: "0:45", Root: "/", Point: `/x\04`, FSType: "tmpfs", Source: "tmpfs", Super: "rw"}, true},
		{`80 27 0:45 / /x rw`, Entry{}, false},
		{`1 2 3 4 5 6 7 8 9 10`, Entry{}, false},
		{``, Entry{}, false},
	} {
		got, ok := ParseLine(tc.line)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParse(t *testing.T) {
	es, err := Parse(strings.NewReader("22 27 0:21 / /proc rw,relatime - proc proc rw\nnot a line\n27 1 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"))
	if err != nil || len(es) != 2 || es[0].Point != "/proc" || es[1].FSType != "ext4" {
		t.Fatalf("%+v %v", es, err)
	}
	if !HasOption("rw,allow_other", "allow_other") || HasOption("rw,allow_other_x", "allow_other") {
		t.Error("HasOption")
	}
}

func FuzzParseLine(f *testing.F) {
	f.Add(`80 27 0:45 / /tmp/a\040b rw,nosuid - fuse.computerfs /ws.cfs rw,allow_other`)
	f.Add(`1 1 0:1 / / rw - - - -`)
	f.Fuzz(func(t *testing.T, line string) {
		e, ok := ParseLine(line)
		if !ok && e != (Entry{}) {
			t.Fatalf("%q: not ok but %+v", line, e)
		}
		if len(e.Point)+len(e.Root)+len(e.Source) > len(line) {
			t.Fatalf("%q: fields longer than the line: %+v", line, e)
		}
	})
}
