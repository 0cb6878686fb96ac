package bench

import (
	"math"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		in            []float64
		med, min, max float64
		n             int
	}{
		{[]float64{3}, 3, 3, 3, 1},
		{[]float64{5, 1, 3}, 3, 1, 5, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4, 4},
		{[]float64{2, 2, 9, 2, 100}, 2, 2, 100, 5},
		{[]float64{math.NaN(), 7, 1}, 4, 1, 7, 2},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.in...)
		s := Summarize(tt.in)
		if s.N != tt.n || s.Median != tt.med || s.Min != tt.min || s.Max != tt.max {
			t.Errorf("Summarize(%v) = %+v, want n %d median %g min %g max %g", tt.in, s, tt.n, tt.med, tt.min, tt.max)
		}
		for i := range in {
			if in[i] != tt.in[i] && !(math.IsNaN(in[i]) && math.IsNaN(tt.in[i])) {
				t.Errorf("Summarize reordered its input: %v", tt.in)
			}
		}
	}
	if s := Summarize(nil); s.N != 0 || !math.IsNaN(s.Median) || !math.IsNaN(s.Min) || !math.IsNaN(s.Max) {
		t.Errorf("Summarize(nil) = %+v, want N 0 and NaNs", s)
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		x, base, want float64
	}{
		{2, 1, 2},
		{1, 4, 0.25},
		{0, 4, 0},
		{3, 3, 1},
		{1, 0, math.NaN()},
		{1, -1, math.NaN()},
		{math.NaN(), 1, math.NaN()},
		{1, math.NaN(), math.NaN()},
		{1, math.Inf(1), math.NaN()},
	}
	for _, tt := range tests {
		got := Ratio(tt.x, tt.base)
		if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("Ratio(%g, %g) = %g, want %g", tt.x, tt.base, got, tt.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 1000; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tt := range []struct {
		p    float64
		want time.Duration
	}{{50, 500}, {99, 990}, {99.9, 999}, {100, 1000}, {0.01, 1}} {
		if got := Percentile(d, tt.p); got != tt.want {
			t.Errorf("Percentile(1..1000, %g) = %d, want %d", tt.p, got, tt.want)
		}
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("Percentile(nil) = %d", got)
	}
	if got := Percentile([]time.Duration{7}, 99.9); got != 7 {
		t.Errorf("Percentile([7], 99.9) = %d", got)
	}
}

func TestSummarizeWorkload(t *testing.T) {
	wr := &WorkloadResult{Name: "w", Primary: MetricSeconds, Results: []*TargetResult{
		{Target: "computerfs", Samples: []Sample{{Seconds: 3}, {Seconds: 1}, {Seconds: 2}}},
		{Target: "ext4", Samples: []Sample{{Seconds: 1}, {Seconds: 1.5}, {Seconds: 0.5}}},
		{Target: "broken", Error: "boom"},
	}}
	summarize(wr, "ext4")
	c, e, b := wr.Results[0], wr.Results[1], wr.Results[2]
	if c.Primary == nil || c.Primary.Median != 2 || c.Primary.Min != 1 || c.Primary.Max != 3 {
		t.Fatalf("computerfs summary %+v", c.Primary)
	}
	if c.Ratio == nil || *c.Ratio != 2 || e.Ratio == nil || *e.Ratio != 1 {
		t.Fatalf("ratios %v %v, want 2 and 1", c.Ratio, e.Ratio)
	}
	if b.Primary != nil || b.Ratio != nil {
		t.Fatalf("failed target has statistics: %+v", b)
	}

	rates := &WorkloadResult{Name: "jobs/x", Primary: MetricMiBs, HigherIsBetter: true, Results: []*TargetResult{
		{Target: "computerfs", Samples: []Sample{{Seconds: 9, Metrics: Metrics{MetricMiBs: 100, MetricIOPS: 5}}, {Seconds: 1, Metrics: Metrics{MetricMiBs: 300, MetricIOPS: 7}}}},
		{Target: "ext4", Samples: []Sample{{Seconds: 1, Metrics: Metrics{MetricMiBs: 400}}}},
	}}
	summarize(rates, "ext4")
	if got := rates.Results[0].Primary.Median; got != 200 {
		t.Errorf("MiB/s median %g, want 200", got)
	}
	if got := *rates.Results[0].Ratio; got != 0.5 {
		t.Errorf("MiB/s ratio %g, want 0.5", got)
	}
	if got := rates.Results[0].Metrics[MetricIOPS].Median; got != 6 {
		t.Errorf("IOPS median %g, want 6", got)
	}

	noBase := &WorkloadResult{Name: "w", Results: []*TargetResult{{Target: "a", Samples: []Sample{{Seconds: 1}}}}}
	summarize(noBase, "ext4")
	if noBase.Results[0].Ratio != nil {
		t.Errorf("ratio without a baseline: %v", *noBase.Results[0].Ratio)
	}
}
