//go:build !race

package boltcheck

const raceEnabled = false
