package bench

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// TestNpmPackages checks the generated package set without npm: it is
// the same in every run, every tarball is a package/ tree with a
// manifest naming it, its integrity is its sha512, and the registry
// serves packuments whose tarball URLs it serves too.
func TestNpmPackages(t *testing.T) {
	a, err := genNpmPackages()
	if err != nil {
		t.Fatal(err)
	}
	b, err := genNpmPackages()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != npmPackages+npmDual || len(b) != len(a) {
		t.Fatalf("%d and %d package versions, want %d", len(a), len(b), npmPackages+npmDual)
	}
	files := 0
	for i, p := range a {
		if !bytes.Equal(p.tgz, b[i].tgz) {
			t.Fatalf("%s@%s differs between two generations", p.name, p.version)
		}
		sum := sha512.Sum512(p.tgz)
		if p.integrity != "sha512-"+base64.StdEncoding.EncodeToString(sum[:]) {
			t.Fatalf("%s: integrity %s does not match", p.name, p.integrity)
		}
		zr, err := gzip.NewReader(bytes.NewReader(p.tgz))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			if !strings.HasPrefix(h.Name, "package/") {
				t.Fatalf("%s: entry %s outside package/", p.name, h.Name)
			}
			files++
			if h.Name == "package/package.json" {
				var m struct{ Name, Version string }
				if err := json.NewDecoder(tr).Decode(&m); err != nil || m.Name != p.name || m.Version != p.version {
					t.Fatalf("%s@%s: manifest names %s@%s (%v)", p.name, p.version, m.Name, m.Version, err)
				}
			}
		}
	}
	if files < 20*len(a) {
		t.Errorf("%d files in %d packages: want about 35 a package, as real ones", files, len(a))
	}

	srv := httptest.NewServer(npmRegistry(a))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/" + npmName(npmPackages-1))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Versions map[string]struct {
			Dist struct{ Tarball, Integrity string }
		}
	}
	err = json.NewDecoder(res.Body).Decode(&doc)
	res.Body.Close()
	if err != nil || len(doc.Versions) != 2 {
		t.Fatalf("packument of a dual package: %d versions (%v), want 2", len(doc.Versions), err)
	}
	for v, d := range doc.Versions {
		res, err := srv.Client().Get(d.Dist.Tarball)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		sum := sha512.Sum512(body)
		if res.StatusCode != 200 || d.Dist.Integrity != "sha512-"+base64.StdEncoding.EncodeToString(sum[:]) {
			t.Errorf("version %s: tarball %s: status %d, integrity mismatch", v, d.Dist.Tarball, res.StatusCode)
		}
	}
	if res, _ := srv.Client().Get(srv.URL + "/nonesuch"); res == nil || res.StatusCode != 404 {
		t.Errorf("an unknown package is not 404")
	}
}

// TestNpmProject prepares the npm input with the real npm (its cache
// filled from the loopback registry) and installs it offline on ext4,
// as the row does.
func TestNpmProject(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	if testing.Short() {
		t.Skip("installs a few thousand files with npm")
	}
	in, err := NewInputs(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Prepare(t.Context(), []string{NeedNpm}); err != nil {
		t.Fatal(err)
	}
	w, note := npmWorkload()
	if note != "" {
		t.Fatal(note)
	}
	tgt := &Target{Name: "ext4", Dir: t.TempDir()}
	if _, notes, err := RunOnce(t.Context(), &w, tgt, in, 0, true, nil); err != nil {
		t.Fatal(err)
	} else {
		t.Log(notes)
	}
}
