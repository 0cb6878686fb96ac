package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
)

// The data-path workloads (issue 19): what a database, a package cache
// or a large artifact does to a filesystem, through the real fio and
// Python's sqlite3. Files are 256 MiB of random bytes (incompressible,
// no two chunks alike). Cold runs drop the kernel's caches and, on
// computerfs, the daemon's own (dropCaches).
const dataFileSize = 256 << 20

// DataWorkloads are the data-path workloads whose tools are installed;
// notes say which were left out and why.
func DataWorkloads() (ws []Workload, notes []string) {
	if _, haveFio := FioPath(); !haveFio {
		notes = append(notes, "fio is not installed (Debian: apt-get install fio): the data/fio-* workloads were left out")
	} else {
		ws = append(ws,
			fioData("data/fio-randwrite-4k", "fio 4 KiB random writes (psync, one job, at most 10 s) over a 256 MiB file of random bytes", true, false,
				"--rw=randwrite", "--bs=4k", "--runtime=10"),
			fioData("data/fio-randread-4k-cold", "fio 4 KiB random reads (psync, one job, at most 10 s) of a 256 MiB file of random bytes, caches dropped (the daemon's too)", true, true,
				"--rw=randread", "--bs=4k", "--runtime=10"),
			fioData("data/fio-read-256m-cold", "fio sequential 1 MiB reads of a 256 MiB file of random bytes, caches dropped (the daemon's too)", true, true,
				"--rw=read", "--bs=1m"),
			fioData("data/fio-write-256m", "fio sequential 1 MiB writes of a new 256 MiB file (no fsync)", false, false,
				"--rw=write", "--bs=1m"),
		)
	}
	if err := exec.Command("python3", "-c", "import sqlite3").Run(); err != nil {
		notes = append(notes, "python3 with sqlite3 is not installed: data/sqlite was left out")
	} else {
		ws = append(ws, Workload{
			Name: "data/sqlite",
			Desc: "Python sqlite3 (rollback journal, synchronous=FULL): 20k inserts in 200 transactions, then 2k updates in 20",
			Run: func(ctx context.Context, e *Env) (Metrics, error) {
				_, err := e.command(ctx, e.Dir, nil, "python3", "-c", sqliteScript, filepath.Join(e.Dir, "bench.db"))
				return nil, err
			},
		})
	}
	if w, note := npmWorkload(); note != "" {
		notes = append(notes, note)
	} else {
		ws = append(ws, w)
	}
	return ws, notes
}

// fioData is a fio run over one file, f, in the run's directory: laid
// out first with random bytes unless fresh, and its caches dropped
// after when cold.
func fioData(name, desc string, layout, cold bool, args ...string) Workload {
	primary := MetricMiBs
	for _, a := range args {
		if a == "--bs=4k" {
			primary = MetricIOPS
		}
	}
	return Workload{
		Name:    name,
		Desc:    desc,
		Primary: primary,
		Setup: func(ctx context.Context, e *Env) error {
			if layout {
				f := filepath.Join(e.Dir, "f")
				// A new seed each time: no run finds its chunks stored.
				if err := writeRandom(f, dataFileSize, rand.Uint64()); err != nil {
					return err
				}
				if err := fsyncPath(f); err != nil {
					return err
				}
			}
			if cold {
				return dropCaches(e)
			}
			return nil
		},
		Run: func(ctx context.Context, e *Env) (Metrics, error) {
			fioPath, _ := FioPath()
			all := append([]string{"--name=" + filepath.Base(name), "--filename=f", "--size=" + strconv.Itoa(dataFileSize),
				"--ioengine=psync", "--output-format=json"}, args...)
			out, err := e.command(ctx, e.Dir, nil, fioPath, all...)
			if err != nil {
				return nil, fmt.Errorf("fio: %w", err)
			}
			return ParseFioJSON(out)
		},
	}
}

// sqliteScript is the SQLite workload: its argument is the database.
const sqliteScript = `
import random, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("pragma synchronous=full")
c.execute("create table t (id integer primary key, k text, v text)")
c.commit()
r = random.Random(1)
n = 0
for _ in range(200):
    for _ in range(100):
        n += 1
        c.execute("insert into t (k, v) values (?, ?)", ("key%d" % n, "v" * r.randint(20, 200)))
    c.commit()
for i in range(2000):
    c.execute("update t set v = ? where id = ?", ("u" * r.randint(20, 200), r.randint(1, n)))
    if i % 100 == 99:
        c.commit()
c.commit()
c.close()
`
