package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/size"
)

// cmdScrub verifies every chunk and record of a workspace, like zpool
// scrub: read-only, a batch per transaction, at a bounded rate; through
// its daemon when it is served.
func runScrub(ctx context.Context, e *env, o scrubOptions, args []string) error {
	asJSON, rateStr := o.json, o.rate
	ws, err := workspaceArg(args[0])
	if err != nil {
		return err
	}
	rate, err := size.Parse(rateStr)
	if err != nil {
		return fmt.Errorf("--rate: %w", err)
	}
	bar := newProgress(e, "scrub", true)
	progress := func(done, total uint64) { bar.set("", done, total) }
	// A served workspace is scrubbed by its daemon, live; another is
	// opened read-only.
	var rep *fs.ScrubReport
	d, closeD, err := daemonOf(ctx, ws)
	switch {
	case err != nil:
		return err
	case d != nil:
		defer closeD()
		rep, err = d.Scrub(ctx, rate, progress)
	default:
		var st *chunkstore.Store
		if err := requireWorkspace(ws); err != nil {
			return err
		}
		if st, err = chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, ReadOnly: true}); err != nil {
			return err
		}
		defer st.Close()
		rep, err = fs.Scrub(ctx, st, fs.ScrubOptions{Rate: int64(rate), Progress: progress})
	}
	bar.finish()
	if err != nil {
		return fmt.Errorf("scrub %s: %w", ws, err)
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		fmt.Fprintf(e.stdout, "%s: %d chunks (%s stored), %d records, %d chunk lists verified in %.1fs\n",
			ws, rep.Chunks, size.Format(rep.Bytes), rep.Records, rep.Files, rep.Seconds)
		for _, d := range rep.Damage {
			fmt.Fprintf(e.stdout, "damage: %s\n", d)
		}
		if rep.Clean() {
			fmt.Fprintln(e.stdout, "clean")
		}
	}
	if !rep.Clean() {
		return fmt.Errorf("%d damaged (computerfs fsck --repair mends what it can)", len(rep.Damage))
	}
	return nil
}
