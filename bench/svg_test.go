package bench

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
)

func ratioPtr(v float64) *float64 { return &v }

func sampleReport() *Report {
	r := &Report{Runs: 3, Baseline: "ext4", Targets: []*Target{{Name: "computerfs"}, {Name: "ext4"}, {Name: "tmpfs"}, {Name: "<odd & name>"}}}
	add := func(name string, rate bool, ratios ...float64) {
		wr := &WorkloadResult{Name: name, Primary: MetricSeconds, HigherIsBetter: rate}
		if rate {
			wr.Primary = MetricMiBs
		}
		for i, t := range r.Targets {
			tr := &TargetResult{Target: t.Name}
			if i < len(ratios) && ratios[i] >= 0 {
				tr.Primary = &Summary{N: 3, Median: ratios[i], Min: ratios[i], Max: ratios[i]}
				tr.Ratio = ratioPtr(ratios[i])
			} else {
				tr.Error = "failed"
			}
			wr.Results = append(wr.Results, tr)
		}
		r.Workloads = append(r.Workloads, wr)
	}
	add("create-1000", false, 4.2, 1, 0.3, 2)
	add("untar-src", false, 12, 1, 0.01, -1)
	add("jobs/seqread-1m", true, 0.2, 1, 5, 1.5)
	add("fio/<weird>&name", true, 0.004, 1, 700, 1)
	return r
}

// parseSVG checks that the document is well-formed XML and counts its
// elements by name.
func parseSVG(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	counts := map[string]int{}
	depth, roots := 0, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, doc)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if el.Name.Local != "svg" || el.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element %v, want svg in the SVG namespace", el.Name)
				}
			}
			depth++
			counts[el.Name.Local]++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 || depth != 0 {
		t.Fatalf("%d root elements, depth %d at the end", roots, depth)
	}
	return counts
}

func TestWriteSVG(t *testing.T) {
	r := sampleReport()
	var b bytes.Buffer
	if err := r.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	counts := parseSVG(t, b.Bytes())
	// One bar per target with a ratio: 4 + 3 + 4 + 4, each with a title.
	if counts["title"] != 15 {
		t.Errorf("%d bars with titles, want 15", counts["title"])
	}
	// Bars, the background and the legend swatches.
	if want := 15 + 1 + len(r.Targets); counts["rect"] != want {
		t.Errorf("%d rects, want %d", counts["rect"], want)
	}
	s := b.String()
	if strings.Count(s, `stroke-dasharray`) != 2 {
		t.Errorf("want a dashed line at 1.0 in each of the two panels")
	}
	for _, want := range []string{"computerfs", "tmpfs", "&lt;odd &amp; name&gt;", "fio/&lt;weird&gt;&amp;name", "lower is better", "higher is better"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

func TestWriteSVGEmpty(t *testing.T) {
	for _, r := range []*Report{
		{Baseline: "ext4"},
		{Baseline: "ext4", Workloads: []*WorkloadResult{{Name: "w", Results: []*TargetResult{{Target: "a", Error: "x"}}}}},
	} {
		var b bytes.Buffer
		if err := r.WriteSVG(&b); err != nil {
			t.Fatal(err)
		}
		parseSVG(t, b.Bytes())
	}
}

func TestWriteTableAndJSON(t *testing.T) {
	r := sampleReport()
	r.Notes = []string{"a note"}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	for _, want := range []string{"create-1000", "4.20x", "FAILED", "FAILURES:", "untar-src on <odd & name>: failed", "a note", "jobs/seqread-1m"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
	b.Reset()
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
}

func TestWriteJSONNonFinite(t *testing.T) {
	r := sampleReport()
	r.Workloads[0].Results[0].Samples = []Sample{{Seconds: 1, Metrics: Metrics{MetricMiBs: math.Inf(1)}}}
	r.Workloads[0].Results[0].Primary = &Summary{Median: math.NaN()}
	r.Scenarios = []*ScenarioResult{{Name: "s", Values: []Value{{Name: "v", Value: math.NaN()}}}}
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
}
