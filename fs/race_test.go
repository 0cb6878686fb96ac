//go:build race

package fs

// raceEnabled: the race detector is on (the fault test runs without it).
const raceEnabled = true
