package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
	"github.com/computerfs/computerfs/workspace"
)

// grepPattern is common enough in Go's sources to give a few hundred
// lines, and under the file API's page limit.
const grepPattern = "TODO"

// scenarioGrep times the file API's grep against GNU grep -rn over the
// same tree, mounted, and over a copy on ext4 for reference: warm (the
// page cache holds the tree) and cold (caches dropped before each run).
func scenarioGrep(ctx context.Context, s *ScenarioEnv, r *ScenarioResult) error {
	dir, err := os.MkdirTemp(s.Root, "grep-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ws, mnt, ext4 := filepath.Join(dir, "ws.cfs"), filepath.Join(dir, "mnt"), filepath.Join(dir, "ext4")
	for _, d := range []string{mnt, ext4} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	f, err := fs.Open(ws, fs.Options{Logger: s.Log})
	if err != nil {
		return err
	}
	defer f.Close()
	srv, err := fusefs.Mount(f, mnt, s.Fuse)
	if err != nil {
		return err
	}
	defer srv.Unmount()
	api := workspace.New(f, workspace.Options{})
	api.SetNotifier(srv)
	for _, d := range []string{mnt, ext4} {
		if _, err := runCmd(ctx, d, nil, "tar", "xf", s.Inputs.SrcTar); err != nil {
			return err
		}
	}
	if err := f.Sync(ctx); err != nil {
		return err
	}

	gnu := func(root string) (int, error) {
		cmd := commandIn(ctx, root, "grep", "-rn", "-F", grepPattern, ".")
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("grep -rn in %s: %w", root, err)
		}
		return bytes.Count(out, []byte("\n")), nil
	}
	viaAPI := func() (int, error) {
		n := 0
		for off := 0; ; {
			res, err := api.Grep(ctx, "/", workspace.GrepOptions{Pattern: grepPattern, Limit: workspace.MaxLimit, Offset: off})
			if err != nil {
				return 0, err
			}
			n += len(res.Lines)
			if res.Next == 0 {
				return n, nil
			}
			off = res.Next
		}
	}
	type contender struct {
		name string
		run  func() (int, error)
	}
	contenders := []contender{
		{"file API grep", viaAPI},
		{"grep -rn on the mount", func() (int, error) { return gnu(mnt) }},
		{"grep -rn on ext4", func() (int, error) { return gnu(ext4) }},
	}
	const runs = 5
	for _, cold := range []bool{false, true} {
		times := make([][]time.Duration, len(contenders))
		lines := make([]int, len(contenders))
		for i := -1; i < runs; i++ { // run -1 warms up
			for ci, c := range contenders {
				if cold {
					syscall.Sync()
					if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0); err != nil {
						return fmt.Errorf("drop caches: %w", err)
					}
				}
				t0 := time.Now()
				n, err := c.run()
				if err != nil {
					return err
				}
				if i >= 0 {
					times[ci] = append(times[ci], time.Since(t0))
				}
				lines[ci] = n
			}
		}
		kind := "warm"
		if cold {
			kind = "cold"
		}
		med := make([]time.Duration, len(contenders))
		for ci, c := range contenders {
			slices.Sort(times[ci])
			med[ci] = times[ci][len(times[ci])/2]
			r.add(fmt.Sprintf("%s, %s (median of %d)", c.name, kind, runs), float64(med[ci])/float64(time.Millisecond), "ms")
		}
		r.add(fmt.Sprintf("file API / grep on the mount, %s", kind), float64(med[0])/float64(med[1]), "x")
		r.add(fmt.Sprintf("file API / grep on ext4, %s", kind), float64(med[0])/float64(med[2]), "x")
		r.check(fmt.Sprintf("same matches, %s", kind), lines[0] == lines[1] && lines[1] == lines[2], "%d, %d and %d lines", lines[0], lines[1], lines[2])
		r.check(fmt.Sprintf("file API faster than grep -rn on the mount, %s", kind), med[0] < med[1], "%.1f ms against %.1f ms", float64(med[0])/1e6, float64(med[1])/1e6)
	}
	r.add("files searched", float64(s.Inputs.SrcFiles), "")
	return nil
}
