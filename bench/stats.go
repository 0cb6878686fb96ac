package bench

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of measurements of one quantity.
type Summary struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Summarize returns the median, minimum and maximum of xs; the median of an
// even count is the mean of the two middle values. NaN values are ignored.
// An empty input gives N 0 and NaN statistics.
func Summarize(xs []float64) Summary {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	slices.Sort(v)
	n := len(v)
	med := v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return Summary{N: n, Median: med, Min: v[0], Max: v[n-1]}
}

// Ratio is x/base, or NaN when either is not a positive finite number.
func Ratio(x, base float64) float64 {
	if !(base > 0) || math.IsInf(base, 0) || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return math.NaN()
	}
	return x / base
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method, or 0 if sorted is empty.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9)) // tolerate rounding: 99.9% of 1000 is 999
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
