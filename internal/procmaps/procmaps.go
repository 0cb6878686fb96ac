// Package procmaps reads which ranges of a process's address space map a
// given file, from /proc/PID/maps. It only parses; it neither touches
// nor changes a mapping.
package procmaps

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mapping is a range of an address space that maps a file.
type Mapping struct {
	Start, End uintptr
	Offset     uint64 // of Start in the file
}

// Of lists the mappings of the file with device dev and inode ino in
// process pid ("self" for this one). A process that is gone or cannot be
// read is an error.
func Of(pid string, dev, ino uint64) ([]Mapping, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "maps"))
	if err != nil {
		return nil, err
	}
	return parse(string(b), dev, ino), nil
}

func parse(maps string, dev, ino uint64) []Mapping {
	wantDev := fmt.Sprintf("%02x:%02x", unix.Major(dev), unix.Minor(dev))
	wantIno := strconv.FormatUint(ino, 10)
	var out []Mapping
	for _, line := range strings.Split(maps, "\n") {
		// 7f..-7f.. r--s 00000000 fd:01 1234 /path
		fl := strings.Fields(line)
		if len(fl) < 5 || fl[3] != wantDev || fl[4] != wantIno {
			continue
		}
		lo, hi, ok := strings.Cut(fl[0], "-")
		if !ok {
			continue
		}
		s, err1 := strconv.ParseUint(lo, 16, 64)
		e, err2 := strconv.ParseUint(hi, 16, 64)
		off, err3 := strconv.ParseUint(fl[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil || e <= s {
			continue
		}
		out = append(out, Mapping{Start: uintptr(s), End: uintptr(e), Offset: off})
	}
	return out
}
