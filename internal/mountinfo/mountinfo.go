// Package mountinfo parses the kernel's mount tables
// (/proc/<pid>/mountinfo, proc(5)). It owns the parsing only: it never
// mounts or unmounts anything.
package mountinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Entry is one line of a mountinfo table:
// "id parent major:minor root point options [optional...] - fstype source super-options".
type Entry struct {
	Dev    string // major:minor of the file system
	Root   string // the mount's root within its file system
	Point  string // the mount point, in the reader's root
	FSType string // e.g. ext4, fuse.computerfs
	Source string // e.g. /dev/vda, the store's path of a computerfs mount
	Super  string // the super block's options, e.g. rw,user_id=0,allow_other
}

// ParseLine parses one line; ok is false for a line that is not one.
// Paths come back with the kernel's octal escapes undone.
func ParseLine(line string) (e Entry, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 10 {
		return Entry{}, false
	}
	for i := 6; i+3 < len(fields); i++ {
		if fields[i] == "-" {
			return Entry{
				Dev: fields[2], Root: Unescape(fields[3]), Point: Unescape(fields[4]),
				FSType: fields[i+1], Source: Unescape(fields[i+2]), Super: fields[i+3],
			}, true
		}
	}
	return Entry{}, false
}

// Parse reads a whole table.
func Parse(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if e, ok := ParseLine(sc.Text()); ok {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// Read reads the table at path: /proc/self/mountinfo for the process's
// (its main thread's) mount namespace, /proc/thread-self/mountinfo for
// the calling thread's.
func Read(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	es, err := Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return es, nil
}

// HasOption says whether a comma-separated option list (Super) holds opt.
func HasOption(list, opt string) bool {
	return strings.Contains(","+list+",", ","+opt+",")
}

// Unescape undoes the kernel's octal escapes of a mountinfo path (\040
// for a space, \011, \012, \134 for a backslash).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
