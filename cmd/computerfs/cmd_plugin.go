package main

import "github.com/spf13/cobra"

// computerfs plugin check PATH: check a backend plugin executable against
// the protocol (pluginapi/PROTOCOL.md), running it as the daemon does.
func newPluginCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "plugin check PATH [--json]",
		Short: "check a backend plugin executable against the protocol, running it as the daemon does",
		Args:  argRange(0, 0),
		RunE: func(c *cobra.Command, args []string) error {
			c.Usage()
			return exitCode(exitUsage)
		},
	}
	o := pluginCheckOptions{Settings: map[string]string{}}
	check := &cobra.Command{
		Use:   "check PATH",
		Short: "run the plugin at PATH through every check of the protocol; exit 1 if a required check fails",
		Args:  argRange(1, 1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Path = args[0]
			return pluginCheck(c.Context(), e, o)
		},
	}
	f := check.Flags()
	f.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	f.StringVar(&o.Probes, "probes", "", "a JSON file of the plugin's commands for the checks (PROTOCOL.md, Checking a plugin)")
	f.Var(envFlag(o.Settings), "setting", "a setting passed to Configure, as a policy's `NAME=VALUE` (repeatable)")
	f.BoolVar(&o.NoMount, "no-mount", false, "do not FUSE-mount the temporary workspace (backends that need the mount then fail)")
	c.AddCommand(check)
	return c
}
