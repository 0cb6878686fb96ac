package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/computerfs/computerfs/plugincheck"
)

// pluginCheckOptions are the parsed options of `computerfs plugin check`.
type pluginCheckOptions struct {
	Path     string
	JSON     bool
	Probes   string            // a probes file, "" for the defaults
	Settings map[string]string // passed to Configure
	NoMount  bool
}

// pluginCheck runs the checks and prints the report; it fails (exit 1)
// when a check failed.
func pluginCheck(ctx context.Context, e *env, opts pluginCheckOptions) error {
	copts := plugincheck.Options{Path: opts.Path, Settings: opts.Settings, NoMount: opts.NoMount, Logger: e.log}
	if opts.Probes != "" {
		p, err := plugincheck.LoadProbes(opts.Probes)
		if err != nil {
			return err
		}
		copts.Probes = p
	}
	rep, err := plugincheck.Run(ctx, copts)
	if err != nil {
		return err
	}
	if opts.JSON {
		if err := printJSON(e, rep); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, c := range rep.Checks {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(c.Status), c.Name, c.Reason)
		}
		tw.Flush()
		if rep.Log != "" {
			fmt.Fprintf(e.stdout, "\nthe host's log of the plugin (last lines):\n%s\n", rep.Log)
		}
	}
	if failed := rep.Failed(); len(failed) > 0 {
		if !opts.JSON {
			if opts.Probes == "" && len(rep.Checks) > 5 {
				fmt.Fprintf(e.stdout, "\nThe checks ran the default commands for the kinds the plugin accepts; a plugin with commands of its own\n"+
					"gives them in a probes file: --probes FILE (pluginapi/PROTOCOL.md, section 11).\n")
			}
			fmt.Fprintf(e.stderr, "computerfs plugin check: %s fails: %s\n", rep.Path, strings.Join(failed, ", "))
		}
		return exitCode(1)
	}
	if !opts.JSON {
		fmt.Fprintf(e.stdout, "%s passes\n", rep.Path)
	}
	return nil
}
