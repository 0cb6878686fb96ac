// Package bench is computerfs's benchmark runner: it runs the same named
// workloads side by side on several targets (a fresh computerfs mount, an
// ext4 directory, a tmpfs, and any directory the caller names) and reports
// how computerfs compares.
//
// It owns:
//
//   - the workload catalogue (shell workloads such as creating 1000 small
//     files, dd, cp, git and tar, each split into untimed setup, timed run
//     and untimed cleanup) and the inputs they share, made once per run in
//     an ext4 scratch directory;
//   - the targets: mounting a fresh workspace in-process with fs.Open and
//     fusefs.Mount, mounting a tmpfs, choosing an ext4 directory, mounting
//     nopt1m (go-fuse's loopback over ext4 with kernel passthrough off and
//     1 MiB writes: every byte through its daemon, the limit a
//     daemon-served filesystem is measured against), and tearing all of
//     them down;
//   - the data-path rows (data/*: fio 4 KiB random writes and cold random
//     reads, 256 MiB cold sequential read and sequential write, a SQLite
//     workload, npm ci of a generated project from npm's cache, filled
//     by a registry the bench serves on loopback while it prepares the
//     input); cold means the page cache dropped and, on computerfs,
//     the daemon's chunk cache and its map of the store too
//     (fs.FS.DropCaches); a --target mount served by another daemon gets
//     that daemon's map of its store paged out from outside
//     (process_madvise MADV_PAGEOUT, cold.go);
//   - the runner: targets interleaved (A B C A B C ...), one uncounted
//     warm-up round, then the median, minimum and maximum of N runs and
//     each target's ratio to the baseline (ext4);
//   - a small fio job-file format (a subset of fio's INI) with its parser,
//     a Go engine that runs job files (MiB/s, IOPS, latency percentiles)
//     and a driver for the real fio, whose numbers are shown beside ours;
//   - the scale scenarios (daemon RSS while writing, write amplification,
//     a million-file workspace), which run only when asked for;
//   - the reports: a terminal table (with the sum of the seed workloads'
//     medians per target), a progress bar, JSON and an SVG bar chart.
//
// It uses fs and fusefs only through their public APIs and changes neither.
// The computerfs bench command is a thin door onto Run.
//
// # Running
//
//	computerfs bench                     # everything but the scenarios, 5 runs (needs root for FUSE, tmpfs, drop_caches)
//	computerfs bench --runs 3 --json r.json --svg r.svg
//	computerfs bench --only 'write|read' --target xfs=/mnt/xfs
//	computerfs bench --fio               # also run bench/jobs/*.fio through the real fio
//	computerfs bench --scenario write-amp,million-files --scale 0.01
//	computerfs bench --scenario snapshots --files 100000   # 1k, 10k and 100k files
//	computerfs bench --list
//	computerfs bench --in-container --runs 3   # the shell workloads' commands in runc containers (root, runc)
//	go test -run '^$' -bench . ./bench   # Go benchmarks of a few workloads
//
// # Measuring
//
// Each run of a workload gets a fresh directory on its target; after its
// untimed cleanup the directory is removed, the computerfs workspace is
// synced (fs.FS.Sync) and sync(2) is called, so that one run's write-back
// does not land in the next run's time. The computerfs daemon runs in the
// bench process, so its CPU time competes with the workload's processes,
// as a real daemon's would.
//
// # In containers
//
// With Config.InContainer (computerfs bench --in-container) the shell
// workloads measure what an agent in a container sees: each command of a
// timed step runs in a runc container of its own, started by the
// container backend (package containerbackend, in process, its default
// limits) with the target's directory as /workspace and the inputs
// read-only at their host paths. Every target gets its own backend, with
// its state under the scratch directory, and its name gets "/container"
// ("ext4/container"). Setup, cleanup and drop_caches stay on the host.
// Each command is wrapped in bash that reads $EPOCHREALTIME before and
// after it and prints both last on stderr: a sample's seconds are the sum
// of these inner times, without the containers' start (~0.1 s each), and
// the metric wall_seconds is the timed step's wall clock with it. The job
// files (Go engine and fio) and the scale scenarios do not run in
// containers: they are skipped, with a note. BenchmarkContainerExecTrue
// times the start itself: one exec of `true` through the daemon's plugin
// runtime and the real plugin process.
package bench
