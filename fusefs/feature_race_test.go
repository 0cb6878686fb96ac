//go:build race

package fusefs_test

// raceEnabled: the race detector slows the daemon several times over, so
// the slowest tool checks use smaller inputs.
const raceEnabled = true
