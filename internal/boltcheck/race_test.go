//go:build race

package boltcheck

const raceEnabled = true
