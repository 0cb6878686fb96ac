package mcpserver

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/computerfs/computerfs/workspace"
)

// MarshalJSON writes the listing as encoding/json would write lsOut with
// its maps filled from entries (their keys in the entries' order, not
// sorted: an object's order means nothing): see lsOut.
func (o lsOut) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+48*len(o.entries))
	b = append(b, `{"path":`...)
	b = appendJSONString(b, o.Path)
	b = append(b, `,"dirs":[`...)
	n := 0
	for _, e := range o.entries {
		if e.Type == "dir" {
			b = appendSep(b, n)
			b = appendJSONString(b, e.Name)
			n++
		}
	}
	b = append(b, `],"files":{`...)
	n = 0
	for _, e := range o.entries {
		if e.Type == "file" {
			b = appendSep(b, n)
			b = appendJSONString(b, e.Name)
			b = append(b, ':')
			b = strconv.AppendInt(b, e.Size, 10)
			n++
		}
	}
	b = append(b, '}')
	b = appendGroup(b, "symlinks", o.entries, func(e *workspace.FileInfo) (string, bool) { return e.Target, e.Type == "symlink" })
	b = appendGroup(b, "other", o.entries, func(e *workspace.FileInfo) (string, bool) {
		return e.Type, e.Type != "dir" && e.Type != "file" && e.Type != "symlink"
	})
	if o.long && len(o.entries) > 0 {
		b = append(b, `,"long":{`...)
		for i := range o.entries {
			e := &o.entries[i]
			b = appendSep(b, i)
			b = appendJSONString(b, e.Name)
			b = append(b, `:{"mode":"`...)
			b = append(b, lsMode(e.Mode)...)
			b = append(b, `","mtime":"`...)
			b = e.Mtime.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `"}`...)
		}
		b = append(b, '}')
	}
	if o.Ignored != 0 {
		b = append(b, `,"ignored":`...)
		b = strconv.AppendInt(b, int64(o.Ignored), 10)
	}
	if o.Truncated {
		b = append(b, `,"truncated":true`...)
	}
	return append(b, '}'), nil
}

// lsMode is a mode's permission bits as the listing gives them: "0644".
func lsMode(m uint32) string {
	s := strconv.FormatUint(uint64(m), 8)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

func appendSep(b []byte, n int) []byte {
	if n > 0 {
		return append(b, ',')
	}
	return b
}

// appendGroup writes ,"key":{name:value,...} of the entries that pick
// takes, nothing if none.
func appendGroup(b []byte, key string, entries []workspace.FileInfo, pick func(*workspace.FileInfo) (string, bool)) []byte {
	n := 0
	for i := range entries {
		v, ok := pick(&entries[i])
		if !ok {
			continue
		}
		if n == 0 {
			b = append(b, ',', '"')
			b = append(b, key...)
			b = append(b, `":{`...)
		} else {
			b = append(b, ',')
		}
		b = appendJSONString(b, entries[i].Name)
		b = append(b, ':')
		b = appendJSONString(b, v)
		n++
	}
	if n > 0 {
		b = append(b, '}')
	}
	return b
}

// appendJSONString writes s as a JSON string, as encoding/json does:
// invalid UTF-8 becomes U+FFFD; control characters, quotes and
// backslashes are escaped (and <, >, & are not: they need no escaping).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
