package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunJobFile(t *testing.T) {
	const text = `
[global]
bs=4k
size=256k
[reader]
rw=randread
numjobs=2
[writer]
rw=write
fsync=8
[rwriter]
rw=randwrite
bs=64k
size=1m
`
	jf, err := ParseJobFile("mix.fio", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	if err := LayoutJobFile(ctx, jf, dir); err != nil {
		t.Fatal(err)
	}
	st, err := RunJobFile(ctx, jf, dir)
	if err != nil {
		t.Fatal(err)
	}
	// 2 readers and a writer of 256 KiB, a writer of 1 MiB.
	if want := int64(3*256<<10 + 1<<20); st.Bytes != want {
		t.Errorf("moved %d bytes, want %d", st.Bytes, want)
	}
	if want := int64(3*64 + 16); st.Ops != want {
		t.Errorf("%d ops, want %d", st.Ops, want)
	}
	if st.P50 <= 0 || st.P99 < st.P50 || st.P999 < st.P99 {
		t.Errorf("latency percentiles out of order: %v %v %v", st.P50, st.P99, st.P999)
	}
	m := st.Metrics()
	if m[MetricMiBs] <= 0 || m[MetricIOPS] <= 0 {
		t.Errorf("metrics %v", m)
	}
	for _, name := range []string{"reader.0.0", "reader.1.0", "writer.0.0", "rwriter.0.0"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want := int64(256 << 10)
		if name == "rwriter.0.0" {
			want = 1 << 20
		}
		if fi.Size() != want {
			t.Errorf("%s is %d bytes, want %d", name, fi.Size(), want)
		}
	}
	// Random writes visit every block once: no chunk is left a hole, and
	// no two 64 KiB blocks are equal (nothing to deduplicate).
	data, err := os.ReadFile(filepath.Join(dir, "rwriter.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for off := 0; off < len(data); off += 64 << 10 {
		blk := string(data[off : off+64<<10])
		if seen[blk] {
			t.Fatalf("block at %d repeats an earlier block", off)
		}
		seen[blk] = true
	}
}

func TestRunJobFileRuntimeCap(t *testing.T) {
	jf, err := ParseJobFile("cap.fio", strings.NewReader("[w]\nrw=randwrite\nbs=4k\nsize=1g\nruntime=200ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := RunJobFile(context.Background(), jf, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if st.Elapsed.Seconds() > 5 || st.Bytes >= 1<<30 {
		t.Errorf("runtime cap not honoured: %v, %d bytes", st.Elapsed, st.Bytes)
	}
}

func TestRunJobFileMissingLayout(t *testing.T) {
	jf, err := ParseJobFile("r.fio", strings.NewReader("[r]\nrw=read\nsize=8k\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunJobFile(context.Background(), jf, t.TempDir()); err == nil || !strings.Contains(err.Error(), "job r") {
		t.Errorf("read without layout: err %v, want a job r error", err)
	}
}

func TestParseFioJSON(t *testing.T) {
	out := `fio: some warning
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "seqread-1m",
      "error" : 0,
      "read" : {
        "io_bytes" : 268435456, "bw_bytes" : 1073741824, "iops" : 1024.5,
        "clat_ns" : { "percentile" : { "50.000000" : 120000, "99.000000" : 900000, "99.900000" : 2500000 } }
      },
      "write" : { "io_bytes" : 0, "bw_bytes" : 0, "iops" : 0, "clat_ns" : {} }
    }
  ]
}`
	m, err := ParseFioJSON([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := Metrics{MetricMiBs: 1024, MetricIOPS: 1024.5, MetricP50: 120, MetricP99: 900, MetricP999: 2500}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %g, want %g", k, m[k], v)
		}
	}
	if _, err := ParseFioJSON([]byte(`{"jobs":[{"jobname":"x","error":5}]}`)); err == nil {
		t.Error("a failed fio job parsed")
	}
	if _, err := ParseFioJSON([]byte(`not json`)); err == nil {
		t.Error("garbage parsed")
	}
}
