//go:build !race

package fusefs_test

// raceEnabled: see feature_race_test.go.
const raceEnabled = false
