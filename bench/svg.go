package bench

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
)

// targetColour is the colour of the i-th target in report order.
func targetColour(i int) string {
	colours := []string{"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	return colours[i%len(colours)]
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

type svgPanel struct {
	title    string
	groups   []*WorkloadResult
	lo, hi   float64 // the smallest and largest ratio, 1 included
	lg0, lg1 float64 // the log10 axis range
}

// SVG layout, in pixels.
const (
	svgLeft      = 64
	svgRight     = 24
	svgBarW      = 12
	svgGroupGap  = 16
	svgPlotH     = 240
	svgLabelH    = 130 // room for the rotated workload names
	svgPanelTop  = 34  // the panel title above the plot
	svgHeaderH   = 64  // the chart title and the legend
	svgMinWidth  = 560
	svgTickLabel = 6
)

// WriteSVG draws the ratios of every target's median to the baseline's as
// a bar chart on a log scale: one group of bars per workload, one colour
// per target, a legend and a dashed line at 1.0. Workloads timed by the
// wall clock and job files measured in MiB/s get separate panels, since
// lower is better in one and higher in the other.
func (r *Report) WriteSVG(w io.Writer) error {
	var targets []string
	for _, t := range r.Targets {
		targets = append(targets, t.Name)
	}
	if len(targets) == 0 {
		seen := map[string]bool{}
		for _, wr := range r.Workloads {
			for _, tr := range wr.Results {
				if !seen[tr.Target] {
					seen[tr.Target] = true
					targets = append(targets, tr.Target)
				}
			}
		}
	}
	colour := map[string]string{}
	for i, t := range targets {
		colour[t] = targetColour(i)
	}
	timed := &svgPanel{title: fmt.Sprintf("Wall-clock time relative to %s (lower is better)", r.Baseline), lo: 1, hi: 1}
	rates := &svgPanel{title: fmt.Sprintf("Throughput (MiB/s) relative to %s (higher is better)", r.Baseline), lo: 1, hi: 1}
	for _, wr := range r.Workloads {
		p := timed
		if wr.HigherIsBetter {
			p = rates
		}
		has := false
		for _, tr := range wr.Results {
			if tr.Ratio != nil && *tr.Ratio > 0 && !math.IsInf(*tr.Ratio, 0) {
				has = true
				p.lo, p.hi = math.Min(p.lo, *tr.Ratio), math.Max(p.hi, *tr.Ratio)
			}
		}
		if has {
			p.groups = append(p.groups, wr)
		}
	}
	var panels []*svgPanel
	for _, p := range []*svgPanel{timed, rates} {
		if len(p.groups) == 0 {
			continue
		}
		// A log axis from a power of ten below the smallest ratio to one
		// above the largest.
		p.lg0, p.lg1 = math.Floor(math.Log10(p.lo)), math.Ceil(math.Log10(p.hi))
		if p.lg1-p.lg0 < 1 {
			p.lg0, p.lg1 = p.lg0-1, p.lg1+1
		}
		panels = append(panels, p)
	}
	groupW := float64(len(targets)*svgBarW + svgGroupGap)
	maxGroups := 0
	for _, p := range panels {
		maxGroups = max(maxGroups, len(p.groups))
	}
	width := math.Max(svgMinWidth, svgLeft+svgRight+groupW*float64(maxGroups))
	panelH := float64(svgPanelTop + svgPlotH + svgLabelH)
	height := float64(svgHeaderH) + panelH*float64(max(len(panels), 1))

	b := &bytes.Buffer{}
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", svgLeft, esc(fmt.Sprintf("computerfs bench: median of %d runs, ratio to %s (log scale)", r.Runs, r.Baseline)))
	// Legend.
	x := float64(svgLeft)
	for _, t := range targets {
		fmt.Fprintf(b, `<rect x="%.0f" y="32" width="12" height="12" fill="%s"/>`, x, colour[t])
		fmt.Fprintf(b, `<text x="%.0f" y="42">%s</text>`+"\n", x+16, esc(t))
		x += 16 + 7*float64(len(t)) + 18
	}
	if len(panels) == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", svgLeft, svgHeaderH+20, esc("no ratios to draw (no baseline results)"))
	}
	for pi, p := range panels {
		top := float64(svgHeaderH) + panelH*float64(pi)
		plotTop := top + svgPanelTop
		plotBottom := plotTop + svgPlotH
		lg0, lg1 := p.lg0, p.lg1
		// 1-2-5 ticks while they fit, powers of ten beyond.
		mults := []float64{1, 2, 5}
		if lg1-lg0 > 2 {
			mults = []float64{1}
		}
		y := func(v float64) float64 {
			return plotBottom - (math.Log10(v)-lg0)/(lg1-lg0)*svgPlotH
		}
		plotRight := svgLeft + groupW*float64(len(p.groups))
		fmt.Fprintf(b, `<g>`+"\n")
		fmt.Fprintf(b, `<text x="%d" y="%.0f" font-size="12" font-weight="bold">%s</text>`+"\n", svgLeft, top+20, esc(p.title))
		// Grid lines and tick labels at 1, 2 and 5 times each power of ten.
		for e := lg0; e <= lg1; e++ {
			for _, m := range mults {
				v := m * math.Pow(10, e)
				if math.Log10(v) > lg1+1e-9 {
					continue
				}
				yy := y(v)
				stroke := "#e6e6e6"
				if m == 1 {
					stroke = "#c8c8c8"
				}
				fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1"/>`, svgLeft, yy, plotRight, yy, stroke)
				fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", svgLeft-svgTickLabel, yy+4, esc(tickLabel(v)))
			}
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#000000"/>`+"\n", svgLeft, plotTop, svgLeft, plotBottom)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000"/>`+"\n", svgLeft, plotBottom, plotRight, plotBottom)
		for gi, wr := range p.groups {
			gx := svgLeft + groupW*float64(gi) + svgGroupGap/2
			for ti, t := range targets {
				var tr *TargetResult
				for _, c := range wr.Results {
					if c.Target == t {
						tr = c
					}
				}
				if tr == nil || tr.Ratio == nil || *tr.Ratio <= 0 {
					continue
				}
				ratio := math.Min(math.Max(*tr.Ratio, math.Pow(10, lg0)), math.Pow(10, lg1))
				bx := gx + float64(ti*svgBarW)
				by := y(ratio)
				fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%d" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
					bx, by, svgBarW-1, math.Max(plotBottom-by, 0.5), colour[t],
					esc(fmt.Sprintf("%s on %s: median %s, %.2fx %s", wr.Name, t, formatPrimary(wr.Primary, tr.Primary.Median), *tr.Ratio, r.Baseline)))
			}
			cx := gx + float64(len(targets)*svgBarW)/2
			fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" transform="rotate(-40 %.1f %.1f)">%s</text>`+"\n", cx, plotBottom+14, cx, plotBottom+14, esc(wr.Name))
		}
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#000000" stroke-width="1.5" stroke-dasharray="6,4"/>`+"\n", svgLeft, y(1), plotRight, y(1))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" font-size="10">%s</text>`+"\n", plotRight+3, y(1)+3, esc("1.0"))
		fmt.Fprintf(b, `</g>`+"\n")
	}
	fmt.Fprintf(b, "</svg>\n")
	_, err := w.Write(b.Bytes())
	return err
}

func tickLabel(v float64) string {
	switch {
	case v >= 1:
		return fmt.Sprintf("%gx", v)
	default:
		return fmt.Sprintf("%gx", math.Round(v*1e6)/1e6)
	}
}
