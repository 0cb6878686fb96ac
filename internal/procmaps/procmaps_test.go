package procmaps

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestParse(t *testing.T) {
	maps := `7f0000000000-7f0000100000 r--s 00000000 fd:01 1234 /w/ws.cfs
7f0000200000-7f0000201000 r--s 00010000 fd:01 1234 /w/ws.cfs
7f0000300000-7f0000301000 r--s 00000000 fd:02 1234 /other
7f0000400000-7f0000401000 r--s 00000000 fd:01 12345 /w/other
garbage line
7f0000500000-7f0000400000 r--s 00000000 fd:01 1234 /w/ws.cfs
`
	got := parse(maps, unix.Mkdev(0xfd, 1), 1234)
	want := []Mapping{
		{Start: 0x7f0000000000, End: 0x7f0000100000},
		{Start: 0x7f0000200000, End: 0x7f0000201000, Offset: 0x10000},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
