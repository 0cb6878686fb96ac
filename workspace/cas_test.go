package workspace

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/fs"
)

// A compare-and-swap write or an edit must not replace a file that
// another door (the mount, a plain write, a chmod) changed between its
// check and its swap: it fails with ErrConflict and the other change
// stays.
func TestCASAgainstOtherDoors(t *testing.T) {
	const before = "v1\n"
	tests := []struct {
		name string
		// meanwhile changes /f behind the API's back.
		meanwhile func(t *testing.T, w *WS, f *fs.FS, ino fs.Ino)
		// want is /f's content at the end; "" for the CAS's own.
		want string
	}{
		{name: "nothing", meanwhile: func(*testing.T, *WS, *fs.FS, fs.Ino) {}},
		{name: "write through the mount", want: "V1\n", meanwhile: func(t *testing.T, _ *WS, f *fs.FS, ino fs.Ino) {
			if _, err := f.Open(ino); err != nil {
				t.Fatal(err)
			}
			defer f.Release(ino)
			if _, err := f.Write(context.Background(), ino, 0, []byte("V"), false); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "same bytes written again", want: before, meanwhile: func(t *testing.T, _ *WS, f *fs.FS, ino fs.Ino) {
			if _, err := f.Open(ino); err != nil {
				t.Fatal(err)
			}
			defer f.Release(ino)
			if _, err := f.Write(context.Background(), ino, 0, []byte("v"), false); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "truncate", want: "", meanwhile: func(t *testing.T, _ *WS, f *fs.FS, ino fs.Ino) {
			zero := uint64(0)
			if _, err := f.SetAttr(fs.Caller{}, ino, fs.SetAttrIn{Size: &zero}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "plain write through the API", want: "plain\n", meanwhile: func(t *testing.T, w *WS, _ *fs.FS, _ fs.Ino) {
			if _, err := w.Write(context.Background(), "/f", strings.NewReader("plain\n"), WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "replaced by the same content", want: before, meanwhile: func(t *testing.T, w *WS, _ *fs.FS, _ fs.Ino) {
			if _, err := w.Write(context.Background(), "/f", strings.NewReader(before), WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "removed", want: "-", meanwhile: func(t *testing.T, w *WS, _ *fs.FS, _ fs.Ino) {
			if _, err := w.Remove(context.Background(), "/f", RemoveOptions{}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		for _, how := range []string{"write", "edit", "append"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				f, err := fs.Open(filepath.Join(t.TempDir(), "ws.cfs"), fs.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				w := New(f, Options{})
				ctx := context.Background()
				if _, err := w.Write(ctx, "/f", strings.NewReader(before), WriteOptions{}); err != nil {
					t.Fatal(err)
				}
				st, err := w.Stat(ctx, "/f")
				if err != nil {
					t.Fatal(err)
				}
				w.beforeReplace = func() {
					w.beforeReplace = nil // not for the door's own writes
					tc.meanwhile(t, w, f, fs.Ino(st.Ino))
				}
				own := "cas\n" // the content the CAS makes
				switch how {
				case "write":
					_, err = w.Write(ctx, "/f", strings.NewReader("cas\n"), WriteOptions{IfMatch: Hash([]byte(before))})
				case "edit":
					_, err = w.Edit(ctx, "/f", []Edit{{Old: "v1", New: "cas"}}, EditOptions{})
				case "append":
					own = before + "more\n"
					_, err = w.Write(ctx, "/f", strings.NewReader("more\n"), WriteOptions{Append: true, IfMatch: Hash([]byte(before))})
				}
				want := tc.want
				if want == "" && tc.name == "nothing" {
					want = own
					if err != nil {
						t.Fatalf("%s with nothing in between: %v", how, err)
					}
				} else if !errors.Is(err, ErrConflict) {
					t.Fatalf("%s over a change made meanwhile: %v, want ErrConflict", how, err)
				}
				got := "-"
				if rc, err := w.Read(ctx, "/f", ReadOptions{}); err == nil {
					b, _ := io.ReadAll(rc)
					rc.Close()
					got = string(b)
				}
				if got != want {
					t.Errorf("/f is %q, want %q", got, want)
				}
			})
		}
	}
}
