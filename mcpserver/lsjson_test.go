package mcpserver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/computerfs/computerfs/workspace"
)

// FuzzLsJSON: ls's hand-written JSON decodes to what encoding/json makes
// of the same listing with its maps filled, whatever the names (invalid
// UTF-8 and control characters included).
func FuzzLsJSON(f *testing.F) {
	f.Add("a.go\x00sub\x00link\x00p", "/x", uint8(0x1b), true)
	f.Add("\xff\xfe\x00\"q\\\x00\n\t\x01\x00é\u2028<&>", "/\x7f", uint8(0xff), false)
	f.Add("", "/", uint8(0), true)
	types := []string{"file", "dir", "symlink", "fifo"}
	f.Fuzz(func(t *testing.T, names, dir string, kinds uint8, long bool) {
		o := lsOut{Path: dir, long: long, Ignored: int(kinds % 3), Truncated: kinds%2 == 1}
		seen := map[string]bool{}
		for i, n := range strings.Split(names, "\x00") {
			// Names that are one in JSON (invalid UTF-8 becomes U+FFFD)
			// would be one key twice, in either encoding.
			key, _ := json.Marshal(n)
			if seen[string(key)] || (names == "" && i == 0) {
				continue
			}
			seen[string(key)] = true
			typ := types[(int(kinds)>>(2*(i%4)))&3]
			o.entries = append(o.entries, workspace.FileInfo{Name: n, Type: typ, Size: int64(len(n) * i), Target: n + "→" + dir, Mode: uint32(i * 0o101), Mtime: time.Unix(int64(i)*1e6, int64(i)*7).UTC()})
		}
		got, err := o.MarshalJSON()
		if err != nil || !json.Valid(got) {
			t.Fatalf("invalid JSON %q: %v", got, err)
		}
		type plain lsOut // the fields, without MarshalJSON
		p := plain(o)
		p.Dirs, p.Files = []string{}, map[string]int64{}
		for _, e := range o.entries {
			switch e.Type {
			case "dir":
				p.Dirs = append(p.Dirs, e.Name)
			case "file":
				p.Files[e.Name] = e.Size
			case "symlink":
				if p.Symlinks == nil {
					p.Symlinks = map[string]string{}
				}
				p.Symlinks[e.Name] = e.Target
			default:
				if p.Other == nil {
					p.Other = map[string]string{}
				}
				p.Other[e.Name] = e.Type
			}
			if long {
				if p.Long == nil {
					p.Long = map[string]lsLong{}
				}
				p.Long[e.Name] = lsLong{Mode: lsMode(e.Mode), Mtime: e.Mtime}
			}
		}
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
