package bench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The data/npm-install row: `npm ci --offline` of a generated project
// whose dependency tree npm takes from its own cache, so that the row
// measures npm's pattern of file creation on the target (thousands of
// small files in nested directories, written by many concurrent
// extractions), without a network.
//
// The packages are generated (npmPackages of them, a deterministic
// dependency graph, some in two major versions so that npm nests copies
// under node_modules/X/node_modules, files of a few hundred bytes to tens
// of KiB) and served once, to fill npm's cache and write the lockfile, by
// a registry on loopback that lives only while the input is prepared.

const (
	// npmPackages is the number of generated packages; npmDual of them
	// also exist in a second major version.
	npmPackages = 250
	npmDual     = 25
	// npmRoots is the number of packages the project depends on itself.
	npmRoots = 40
)

// npmEnv is the environment npm runs with in the bench: no user or
// global configuration, no update check.
func npmEnv(in *Inputs) []string {
	return append(os.Environ(),
		"npm_config_userconfig="+filepath.Join(in.NpmDir, "npmrc"),
		"npm_config_globalconfig="+filepath.Join(in.NpmDir, "npmrc-global"),
		"npm_config_cache="+filepath.Join(in.NpmDir, "cache"),
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
		"npm_config_loglevel=error",
		"npm_config_progress=false",
	)
}

// npmWorkload is the data/npm-install row, or a note saying why it was
// left out.
func npmWorkload() (Workload, string) {
	for _, tool := range []string{"npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			return Workload{}, fmt.Sprintf("%s is not installed (Debian: apt-get install nodejs npm): data/npm-install was left out", tool)
		}
	}
	return Workload{
		Name:  "data/npm-install",
		Desc:  fmt.Sprintf("npm ci --offline of a generated project (%d packages, %d in two versions) from npm's cache on ext4", npmPackages, npmDual),
		Needs: []string{NeedNpm},
		Setup: func(ctx context.Context, e *Env) error {
			for _, f := range []string{"package.json", "package-lock.json"} {
				if err := copyFile(filepath.Join(e.Inputs.NpmProject, f), filepath.Join(e.Dir, f)); err != nil {
					return err
				}
			}
			return nil
		},
		Run: func(ctx context.Context, e *Env) (Metrics, error) {
			if _, err := e.command(ctx, e.Dir, npmEnv(e.Inputs), "npm", "ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"); err != nil {
				return nil, err
			}
			n, err := countFiles(filepath.Join(e.Dir, "node_modules"))
			if err != nil {
				return nil, err
			}
			if n != e.Inputs.NpmFiles {
				return nil, fmt.Errorf("npm ci wrote %d files under node_modules, want %d", n, e.Inputs.NpmFiles)
			}
			e.Note("npm ci wrote %d files under node_modules", n)
			return nil, nil
		},
	}, ""
}

// countFiles counts the regular files under dir.
func countFiles(dir string) (int, error) {
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n, err
}

// npmPkg is one generated package version.
type npmPkg struct {
	name, version string
	deps          map[string]string
	files         map[string][]byte // path inside the package -> content
	tgz           []byte
	integrity     string // sha512-<base64>
	shasum        string // sha1 hex
}

func npmName(i int) string { return fmt.Sprintf("cfsb-pkg-%03d", i) }

// genNpmPackages makes the package set: package i depends on one to
// five of the 40 packages after it, on the second major version of a
// dual package (the last npmDual) one time in three.
func genNpmPackages() ([]*npmPkg, error) {
	r := rand.New(rand.NewPCG(19, 471))
	var pkgs []*npmPkg
	make1 := func(i, major int) (*npmPkg, error) {
		p := &npmPkg{name: npmName(i), version: fmt.Sprintf("%d.%d.%d", major, r.IntN(10), r.IntN(20)), deps: map[string]string{}, files: map[string][]byte{}}
		for range 1 + r.IntN(5) {
			j := i + 1 + r.IntN(40)
			if j >= npmPackages {
				continue
			}
			spec := "^1.0.0"
			if j >= npmPackages-npmDual && r.IntN(3) == 0 {
				spec = "^2.0.0"
			}
			p.deps[npmName(j)] = spec
		}
		// Files: a manifest, a readme, a licence, an entry point and a
		// skewed number of sources (most packages small, a few large).
		p.files["README.md"] = makeText(r, 20+r.IntN(150))
		p.files["LICENSE"] = makeText(r, 15)
		p.files["index.js"] = jsText(r, 10+r.IntN(60))
		nsrc := 2 + int(r.ExpFloat64()*16)
		if nsrc > 200 {
			nsrc = 200
		}
		for k := range nsrc {
			dir := "lib"
			if k%7 == 3 {
				dir = fmt.Sprintf("lib/sub%d", k%3)
			}
			base := fmt.Sprintf("%s/m%03d", dir, k)
			p.files[base+".js"] = jsText(r, 5+int(r.ExpFloat64()*120))
			if k%2 == 0 {
				p.files[base+".d.ts"] = jsText(r, 3+r.IntN(20))
			}
			if k%3 == 0 {
				p.files[base+".js.map"] = makeText(r, 2+r.IntN(30))
			}
		}
		manifest, err := json.MarshalIndent(map[string]any{
			"name": p.name, "version": p.version, "main": "index.js", "license": "MIT",
			"description": "generated by computerfs bench", "dependencies": p.deps,
		}, "", "  ")
		if err != nil {
			return nil, err
		}
		p.files["package.json"] = manifest
		if err := p.pack(); err != nil {
			return nil, err
		}
		return p, nil
	}
	for i := range npmPackages {
		p, err := make1(i, 1)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
		if i >= npmPackages-npmDual {
			if p, err = make1(i, 2); err != nil {
				return nil, err
			}
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, nil
}

// jsText is generated text that looks like code.
func jsText(r *rand.Rand, lines int) []byte {
	var b bytes.Buffer
	words := strings.Fields(wordList)
	for i := range lines {
		w := words[r.IntN(len(words))]
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "function %s_%d(a, b) {\n", w, i)
		case 1:
			fmt.Fprintf(&b, "  const %s = a + %d * b; // %s %s\n", w, r.IntN(1000), words[r.IntN(len(words))], words[r.IntN(len(words))])
		case 2:
			fmt.Fprintf(&b, "  return %s.toString(%d);\n", w, 2+r.IntN(30))
		default:
			b.WriteString("}\n")
		}
	}
	return b.Bytes()
}

// pack makes the package's tarball as npm pack does (every path under
// package/) and its checksums.
func (p *npmPkg) pack() error {
	var buf bytes.Buffer
	gz, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(p.files))
	for n := range p.files {
		names = append(names, n)
	}
	slices.Sort(names)
	mtime := time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC) // npm pack's fixed mtime
	for _, n := range names {
		data := p.files[n]
		if err := tw.WriteHeader(&tar.Header{Name: "package/" + n, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	p.tgz = buf.Bytes()
	s512 := sha512.Sum512(p.tgz)
	s1 := sha1.Sum(p.tgz)
	p.integrity = "sha512-" + base64.StdEncoding.EncodeToString(s512[:])
	p.shasum = hex.EncodeToString(s1[:])
	return nil
}

// makeNpmProject prepares the npm input in in.NpmDir: it generates the
// packages, serves them from a registry on loopback while one `npm
// install` fills npm's cache (in.NpmDir/cache) and writes the lockfile,
// and leaves package.json and package-lock.json in in.NpmProject. It
// returns the number of files npm ci writes under node_modules.
func makeNpmProject(ctx context.Context, in *Inputs) (int, error) {
	if err := os.RemoveAll(in.NpmDir); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(in.NpmProject, 0o755); err != nil {
		return 0, err
	}
	for _, f := range []string{"npmrc", "npmrc-global"} {
		if err := os.WriteFile(filepath.Join(in.NpmDir, f), nil, 0o644); err != nil {
			return 0, err
		}
	}
	pkgs, err := genNpmPackages()
	if err != nil {
		return 0, fmt.Errorf("generate packages: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("registry: %w", err)
	}
	base := "http://" + ln.Addr().String() + "/"
	srv := &http.Server{Handler: npmRegistry(pkgs), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		srv.Close()
		<-served
	}()

	deps := map[string]string{}
	for i := range npmRoots {
		deps[npmName(i)] = "^1.0.0"
	}
	// Dual packages at the top in their second version: the first
	// versions go under their dependents' node_modules.
	for i := npmPackages - npmDual; i < npmPackages; i += 3 {
		deps[npmName(i)] = "^2.0.0"
	}
	manifest, err := json.MarshalIndent(map[string]any{
		"name": "cfsb-project", "version": "1.0.0", "private": true, "dependencies": deps,
	}, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(filepath.Join(in.NpmProject, "package.json"), manifest, 0o644); err != nil {
		return 0, err
	}
	env := npmEnv(in)
	if _, err := runCmd(ctx, in.NpmProject, env, "npm", "install", "--registry="+base, "--ignore-scripts", "--no-audit", "--no-fund"); err != nil {
		return 0, err
	}
	n, err := countFiles(filepath.Join(in.NpmProject, "node_modules"))
	if err != nil {
		return 0, err
	}
	if err := os.RemoveAll(filepath.Join(in.NpmProject, "node_modules")); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, errors.New("npm install wrote no files")
	}
	return n, nil
}

// npmBase stands for the registry's URL in the packuments it keeps: each
// answer names the host it was asked at.
const npmBase = "http://registry.invalid/"

// npmRegistry serves the packuments (GET /NAME) and tarballs (GET
// /NAME/-/NAME-VERSION.tgz) of pkgs, as the npm registry does.
func npmRegistry(pkgs []*npmPkg) http.Handler {
	packuments := map[string][]byte{}
	tarballs := map[string][]byte{}
	byName := map[string][]*npmPkg{}
	for _, p := range pkgs {
		byName[p.name] = append(byName[p.name], p)
		tarballs["/"+p.name+"/-/"+p.name+"-"+p.version+".tgz"] = p.tgz
	}
	for name, vs := range byName {
		versions := map[string]any{}
		latest := ""
		for _, p := range vs {
			versions[p.version] = map[string]any{
				"name": p.name, "version": p.version, "dependencies": p.deps,
				"dist": map[string]any{
					"tarball":   npmBase + name + "/-/" + name + "-" + p.version + ".tgz",
					"integrity": p.integrity, "shasum": p.shasum,
				},
			}
			latest = p.version
		}
		doc, _ := json.Marshal(map[string]any{"name": name, "dist-tags": map[string]string{"latest": latest}, "versions": versions})
		packuments["/"+name] = doc
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b, ok := tarballs[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Write(b)
			return
		}
		if b, ok := packuments[r.URL.Path]; ok {
			w.Header().Set("Content-Type", "application/json")
			w.Write(bytes.ReplaceAll(b, []byte(npmBase), []byte("http://"+r.Host+"/")))
			return
		}
		http.NotFound(w, r)
	})
}
