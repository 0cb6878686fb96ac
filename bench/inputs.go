package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/computerfs/computerfs/internal/tailbuf"
)

// Names of the shared inputs a workload may need.
const (
	NeedRand    = "rand"    // two 64 MiB random files
	NeedRandOdd = "randodd" // a random file of 64 MiB + 4099 bytes
	NeedGitRepo = "gitrepo" // a ~1 MB git repository with several commits
	NeedSrcTar  = "srctar"  // a tarball of a few thousand Go source files
	NeedNpm     = "npm"     // a generated npm project and npm's cache of its packages (npm.go)
)

// RandSize is the size of the random input files.
const RandSize = 64 << 20

// RandOddSize is not a multiple of any chunk size, so that a stream of
// copies of the file never repeats a chunk (no deduplication).
const RandOddSize = RandSize + 4099

// Inputs are the files workloads read, made once per run in the ext4
// scratch directory, outside every timed part.
type Inputs struct {
	Dir     string
	Rand    string // 64 MiB of random bytes
	Rand2   string // another 64 MiB, different from Rand
	RandOdd string // RandOddSize random bytes
	GitRepo string // a git repository to clone
	SrcTar  string // an uncompressed tarball of Go source trees
	// SrcFiles is the number of regular files in SrcTar.
	SrcFiles int
	// NpmDir holds npm's cache and configuration for the npm row;
	// NpmProject its package.json and package-lock.json, whose install
	// writes NpmFiles files under node_modules.
	NpmDir, NpmProject string
	NpmFiles           int

	log  *slog.Logger
	done map[string]bool
}

// NewInputs keeps inputs in dir (created if missing).
func NewInputs(dir string, log *slog.Logger) (*Inputs, error) {
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	return &Inputs{
		Dir:        dir,
		Rand:       filepath.Join(dir, "rand-a"),
		Rand2:      filepath.Join(dir, "rand-b"),
		RandOdd:    filepath.Join(dir, "rand-odd"),
		GitRepo:    filepath.Join(dir, "gitsrc"),
		SrcTar:     filepath.Join(dir, "gosrc.tar"),
		NpmDir:     filepath.Join(dir, "npm"),
		NpmProject: filepath.Join(dir, "npm", "project"),
		log:        log,
		done:       map[string]bool{},
	}, nil
}

// Prepare makes the inputs named in needs that are not made yet.
func (in *Inputs) Prepare(ctx context.Context, needs []string) error {
	for _, n := range needs {
		if in.done[n] {
			continue
		}
		var err error
		switch n {
		case NeedRand:
			if err = writeRandom(in.Rand, RandSize, 1); err == nil {
				err = writeRandom(in.Rand2, RandSize, 2)
			}
		case NeedRandOdd:
			err = writeRandom(in.RandOdd, RandOddSize, 3)
		case NeedGitRepo:
			err = makeGitRepo(ctx, in.GitRepo)
		case NeedSrcTar:
			in.SrcFiles, err = makeSrcTar(ctx, in.SrcTar)
		case NeedNpm:
			in.NpmFiles, err = makeNpmProject(ctx, in)
		default:
			err = errors.New("unknown input")
		}
		if err != nil {
			return fmt.Errorf("prepare input %q: %w", n, err)
		}
		in.log.Debug("input ready", "input", n)
		in.done[n] = true
	}
	return nil
}

// writeRandom writes size pseudo-random (incompressible) bytes to path.
func writeRandom(path string, size int64, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	r := rand.NewChaCha8(seedBytes(seed))
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		n := min(left, int64(len(buf)))
		r.Read(buf[:n])
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	if err := f.Close(); err != nil {
		return err
	}
	return nil
}

func seedBytes(seed uint64) [32]byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	copy(s[8:], "computerfs-bench-inputs")
	return s
}

// wordList makes generated text look like text (and compress like it).
const wordList = `the of and to in is that for it as with was on be by this are from or
have an they which one you were all we her she there would their will when who him been has more
if no out do so can what up said about other into than its time only could new them man some these
then two first may any like now my such make over our even most me state after also made many did
must before back see through way where get much go well your know should down work year because
come people just say each those take day good how long own too little use us very great world`

func makeText(r *rand.Rand, lines int) []byte {
	words := strings.Fields(wordList)
	var b bytes.Buffer
	for range lines {
		n := 4 + r.IntN(10)
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// gitEnv keeps the user's and the system's git configuration out.
func gitEnv() []string {
	return append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C")
}

// gitArgs prefixes args with the identity and defaults every git command
// of the benchmarks uses.
func gitArgs(args ...string) []string {
	return append([]string{"-c", "user.name=computerfs bench", "-c", "user.email=bench@computerfs.invalid", "-c", "init.defaultBranch=main"}, args...)
}

// makeGitRepo creates a repository of a few hundred generated text files
// (about 1 MB) with several commits.
func makeGitRepo(ctx context.Context, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(7, 11))
	git := func(args ...string) error {
		_, err := runCmd(ctx, dir, gitEnv(), "git", gitArgs(args...)...)
		return err
	}
	if err := git("init", "-q"); err != nil {
		return err
	}
	const files = 300
	for c := range 5 {
		// The first commit adds every file; later ones rewrite a fifth.
		for i := range files {
			if c > 0 && r.IntN(5) != 0 {
				continue
			}
			p := filepath.Join(dir, fmt.Sprintf("pkg%02d", i%20), fmt.Sprintf("file%03d.txt", i))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, makeText(r, 40+r.IntN(40)), 0o644); err != nil {
				return err
			}
		}
		if err := git("add", "-A"); err != nil {
			return err
		}
		if err := git("commit", "-q", "-m", fmt.Sprintf("commit %d", c+1)); err != nil {
			return err
		}
	}
	return nil
}

func goSrc(ctx context.Context) (string, error) {
	if st, err := os.Stat("/usr/local/go/src/net"); err == nil && st.IsDir() {
		return "/usr/local/go/src", nil
	}
	out, err := runCmd(ctx, "", nil, "go", "env", "GOROOT")
	if err != nil {
		return "", fmt.Errorf("no /usr/local/go/src, and cannot ask go for GOROOT: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "src"), nil
}

// makeSrcTar tars a few Go source trees and returns how many files the
// tarball holds.
func makeSrcTar(ctx context.Context, path string) (int, error) {
	src, err := goSrc(ctx)
	if err != nil {
		return 0, err
	}
	// Go's net, cmd/go and go trees: a few thousand files.
	args := []string{"cf", path, "-C", src, "net", "cmd/go", "go"}
	if _, err := runCmd(ctx, "", nil, "tar", args...); err != nil {
		return 0, err
	}
	out, err := runCmd(ctx, "", nil, "tar", "tf", path)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasSuffix(l, "/") {
			n++
		}
	}
	return n, nil
}

// runCmd runs a command and returns its standard output; a failure's error
// includes the end of its standard error.
func runCmd(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	cmd := commandIn(ctx, dir, name, args...)
	cmd.Env = env
	var stdout bytes.Buffer
	stderr := tailbuf.New(2048)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg != "" {
			return stdout.Bytes(), fmt.Errorf("%s: %w: %s", describeCmd(name, args), err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w", describeCmd(name, args), err)
	}
	return stdout.Bytes(), nil
}

// commandIn is exec.CommandContext for a command that runs in dir, which
// it enters itself (through env -C) rather than in the child between
// clone and exec, as Cmd.Dir does: the mounts are served by this process,
// and a chdir there in that window can wait for a FUSE request (an
// ACCESS or a LOOKUP) that this process never serves. Go's runtime cannot
// always start or schedule the server's goroutine while a thread sits in
// the clone (the bench hung so, a thread in kernel_clone and the child in
// fuse_access).
func commandIn(ctx context.Context, dir, name string, args ...string) *exec.Cmd {
	if dir == "" {
		return exec.CommandContext(ctx, name, args...)
	}
	return exec.CommandContext(ctx, "env", append([]string{"-C", dir, "--", name}, args...)...)
}

// sh runs a bash script in dir.
func sh(ctx context.Context, dir, script string) error {
	_, err := runCmd(ctx, dir, gitEnv(), "bash", "-c", script)
	return err
}

func describeCmd(name string, args []string) string {
	s := name
	for _, a := range args {
		if strings.ContainsAny(a, " \t'\"$;&|<>") {
			a = fmt.Sprintf("%q", a)
		}
		s += " " + a
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// copyFile copies src to dst with plain reads and writes (no
// copy_file_range, which would let a filesystem share extents).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(onlyWriter{out}, onlyReader{in}, buf); err != nil {
		out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return nil
}

type onlyReader struct{ io.Reader }
type onlyWriter struct{ io.Writer }
