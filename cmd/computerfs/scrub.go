package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"

	"github.com/computerfs/computerfs/bench"
	"github.com/computerfs/computerfs/chunkstore"
	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/internal/size"
	"github.com/schollz/progressbar/v3"
)

// cmdScrub verifies every chunk and record of a workspace, like zpool
// scrub: read-only, a batch per transaction, at a bounded rate.
func cmdScrub(ctx context.Context, e *env, args []string) error {
	var asJSON bool
	var rateStr string
	ws, err := oneWorkspace(e, "scrub", args, func(fl *flag.FlagSet) {
		fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
		fl.StringVar(&rateStr, "rate", "0", "read at most this much chunk data per second, e.g. 200M; 0 for no bound")
	})
	if err != nil {
		return err
	}
	rate, err := size.Parse(rateStr)
	if err != nil {
		return fmt.Errorf("--rate: %w", err)
	}
	st, err := chunkstore.Open(ws, chunkstore.Options{Logger: e.log, MustExist: true, ReadOnly: true})
	if err != nil {
		return err
	}
	defer st.Close()
	opts := fs.ScrubOptions{Rate: int64(rate)}
	var bar *progressbar.ProgressBar
	if !asJSON && bench.IsTerminal(e.stderr) {
		bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(e.stderr), progressbar.OptionSetDescription("scrub"),
			progressbar.OptionShowBytes(true), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100e6))
		opts.Progress = func(done, total uint64) {
			bar.ChangeMax64(int64(total))
			bar.Set64(int64(done))
		}
	}
	rep, err := fs.Scrub(ctx, st, opts)
	if bar != nil {
		bar.Finish()
	}
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
