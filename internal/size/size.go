// Package size reads and writes byte sizes as people type them (10G,
// 512MiB, 1.5T, 4096): one parser for the CLI's flags and the backends'
// settings. It touches nothing else.
package size

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a size: a number of bytes, or with a K, M, G or T suffix
// (powers of 1024; a trailing B or iB is allowed), fractions included.
func Parse(s string) (uint64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := uint64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*float64(mult) >= 1<<63 {
		return 0, fmt.Errorf("invalid size %q (want a number with an optional K, M, G or T suffix)", s)
	}
	return uint64(v * float64(mult)), nil
}

// Format writes n in the largest binary unit that keeps it at 1 or more.
func Format(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
