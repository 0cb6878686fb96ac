package main

import (
	"context"
	"flag"
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

// cmdPlugin parses `computerfs plugin check PATH [--json] [--probes FILE]
// [--setting K=V]...`; the work is pluginCheck's.
func cmdPlugin(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(e.stderr, "usage: computerfs plugin check PATH [--json] [--probes FILE] [--setting NAME=VALUE]...")
		return exitCode(exitUsage)
	}
	opts := pluginCheckOptions{Settings: map[string]string{}}
	fl, err := parse(e, "plugin", args[1:], func(fl *flag.FlagSet) {
		fl.BoolVar(&opts.JSON, "json", false, "print the report as JSON")
		fl.StringVar(&opts.Probes, "probes", "", "a JSON file of the plugin's commands for the checks (PROTOCOL.md, Checking a plugin)")
		fl.Var(envFlag(opts.Settings), "setting", "a setting passed to Configure, as a policy's `NAME=VALUE` (repeatable)")
		fl.BoolVar(&opts.NoMount, "no-mount", false, "do not FUSE-mount the temporary workspace (backends that need the mount then fail)")
	})
	if err != nil {
		return err
	}
	if err := needArgs(fl, 1, 1); err != nil {
		return err
	}
	opts.Path = fl.Arg(0)
	return pluginCheck(ctx, e, opts)
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
