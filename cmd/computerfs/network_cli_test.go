package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testNet is a network namespace the test makes, joined to the host's by
// a veth pair: the "internet" of TestNetworkPolicy. Its servers listen
// on its side of the pair.
type testNet struct {
	name     string
	hostAddr string // the host side's address
	addr     string // the namespace side's
}

// newTestNet makes the namespace (ip netns, iproute2), removed with the
// test.
func newTestNet(t *testing.T) *testNet {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2 is not installed (apt-get install iproute2)")
	}
	n := rand.IntN(250) + 2
	tn := &testNet{name: fmt.Sprintf("cfsnet%d-%d", os.Getpid()%10000, n), hostAddr: fmt.Sprintf("10.231.%d.1", n), addr: fmt.Sprintf("10.231.%d.2", n)}
	veth := fmt.Sprintf("cfsv%d%d", os.Getpid()%10000, n)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", tn.name)
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", tn.name).Run()
		exec.Command("ip", "link", "del", veth+"h").Run()
	})
	run("link", "add", veth+"h", "type", "veth", "peer", "name", veth+"n")
	run("link", "set", veth+"n", "netns", tn.name)
	run("addr", "add", tn.hostAddr+"/30", "dev", veth+"h")
	run("link", "set", veth+"h", "up")
	run("netns", "exec", tn.name, "ip", "addr", "add", tn.addr+"/30", "dev", veth+"n")
	run("netns", "exec", tn.name, "ip", "link", "set", veth+"n", "up")
	run("netns", "exec", tn.name, "ip", "link", "set", "lo", "up")
	return tn
}

// serve starts an HTTP server in the namespace on port, answering
// NAME-OK, and returns its count of requests.
func (tn *testNet) serve(t *testing.T, port int, name string) *atomic.Int64 {
	hits, _ := tn.serveAuth(t, port, name)
	return hits
}

// serveAuth is serve, also keeping the last Authorization header.
func (tn *testNet) serveAuth(t *testing.T, port int, name string) (*atomic.Int64, *atomic.Value) {
	t.Helper()
	ln := tn.listen(t, fmt.Sprintf("%s:%d", tn.addr, port))
	hits, auth := new(atomic.Int64), new(atomic.Value)
	auth.Store("")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		auth.Store(r.Header.Get("Authorization"))
		fmt.Fprintf(w, "%s-OK auth=%q\n", name, r.Header.Get("Authorization"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return hits, auth
}

// listen makes a TCP listener inside the namespace: the socket belongs
// to the namespace it was made in, whatever thread serves it later.
func (tn *testNet) listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // unlocked only if the thread is back in its namespace
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			res <- result{err: err}
			return
		}
		defer orig.Close()
		target, err := os.Open("/var/run/netns/" + tn.name)
		if err != nil {
			res <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			res <- result{err: err}
			return
		}
		ln, lerr := net.Listen("tcp", addr)
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err == nil {
			runtime.UnlockOSThread()
		} // else the thread ends with this goroutine, locked
		res <- result{ln, lerr}
	}()
	r := <-res
	if r.err != nil {
		t.Fatalf("listen in the test's network namespace: %v", r.err)
	}
	return r.ln
}

// TestNetworkPolicy: a container whose policy allows only
// registry.example.test (a server in a network namespace the test made)
// reaches it through the daemon's egress proxy, by plain HTTP and by
// CONNECT, and nothing else: another server there (by name, through the
// proxy, and by address, around it) is refused at once with a clear
// error, and got no request (counted by the server). Every verdict is
// in the audit log.
func TestNetworkPolicy(t *testing.T) {
	needContainers(t)
	tn := newTestNet(t)
	registryHits, otherHits := tn.serve(t, 8080, "REGISTRY"), tn.serve(t, 8081, "OTHER")
	// The namespace works from the host (so a refusal below is the
	// policy's, not a broken test network).
	if resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}).Get("http://" + tn.addr + ":8080/"); err != nil {
		t.Fatalf("the test network from the host: %v", err)
	} else {
		resp.Body.Close()
	}
	registryHits.Store(0)

	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	if err := os.WriteFile(filepath.Join(home, "policy.json"), []byte(fmt.Sprintf(`{
		"backends": {"container": {"network": {
			"allow": ["registry.example.test"],
			"hosts": {"registry.example.test": %q, "other.example.test": %q}
		}}}
	}`, tn.addr, tn.addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	startMount(t, home, ws, mnt)
	exec := func(script string) result {
		t.Helper()
		r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", "container", "--", script)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cases := []struct {
		name, script string
		want         []string
		slowest      time.Duration
	}{
		{"plain HTTP, allowed", "curl -sS -m 10 http://registry.example.test:8080/", []string{"REGISTRY-OK"}, 10 * time.Second},
		{"CONNECT, allowed", "curl -sS -m 10 -p http://registry.example.test:8080/", []string{"REGISTRY-OK"}, 10 * time.Second},
		{"plain HTTP, denied", "curl -sS -m 10 http://other.example.test:8081/; echo exit=$?", []string{"computerfs: denied: other.example.test:8081 is not in the network policy of backend container (allowed: registry.example.test)", "exit=0"}, 5 * time.Second},
		{"CONNECT, denied", "curl -sS -m 10 -p http://other.example.test:8081/; echo exit=$?", []string{"CONNECT tunnel failed, response 403", "exit=56"}, 5 * time.Second},
		{"by address, through the proxy", "curl -sS -f -m 10 http://" + tn.addr + ":8080/; echo exit=$?", []string{"403", "exit=22"}, 5 * time.Second},
		{"by address, around the proxy", "curl -sS -m 10 --noproxy '*' http://" + tn.addr + ":8081/; echo exit=$?", []string{"exit=7"}, 5 * time.Second},
		{"by name, around the proxy", "curl -sS -m 10 --noproxy '*' http://registry.example.test:8080/; echo exit=$?", []string{"exit=6"}, 5 * time.Second},
	}
	for _, c := range cases {
		start := time.Now()
		r := exec(c.script)
		took := time.Since(start)
		for _, w := range c.want {
			if !strings.Contains(r.stdout+r.stderr, w) {
				t.Errorf("%s: lacks %q: %v", c.name, w, r)
			}
		}
		if took > c.slowest {
			t.Errorf("%s: took %v (a refusal must fail fast)", c.name, took)
		}
		t.Logf("%s (%v): %s%s", c.name, took.Round(time.Millisecond), r.stdout, r.stderr)
	}
	if n := otherHits.Load(); n != 0 {
		t.Errorf("the server not allowed got %d requests", n)
	}
	if n := registryHits.Load(); n != 2 {
		t.Errorf("the allowed server got %d requests, want 2", n)
	}

	r := cli(t, home, "audit", "-w", ws, "--backend", "container", "--json")
	var recs []struct{ Kind, Verdict, Door, Rule, Path, Detail string }
	if err := json.Unmarshal([]byte(r.stdout), &recs); err != nil {
		t.Fatalf("audit: %v %v", err, r)
	}
	seen := map[string]bool{}
	for _, x := range recs {
		if x.Door == "network" {
			seen[x.Verdict+" "+x.Path] = true
		}
	}
	for _, w := range []string{"allowed registry.example.test:8080", "denied other.example.test:8081", "denied " + tn.addr + ":8080"} {
		if !seen[w] {
			t.Errorf("audit lacks the network verdict %q: %v", w, seen)
		}
	}
}

// TestSecrets: two secrets of the daemon, one from its environment given
// to the container as a variable, one from a file that the egress proxy
// adds to requests to registry.example.test (it never enters the
// container). The server receives the header; the container's
// environment holds the first and not the second; output that shows
// either is redacted; neither value is anywhere in the audit log, the
// exec records, the exec log or the daemon's output; a backend not
// granted a secret does not get it.
func TestSecrets(t *testing.T) {
	needContainers(t)
	tn := newTestNet(t)
	_, auth := tn.serveAuth(t, 8080, "REGISTRY")
	const envValue, fileValue = "env-secret-9f3c1d2e7b", "file-secret-4a8e0c6d5f"
	t.Setenv("CFS_TEST_DAEMON_TOKEN", envValue)
	home, ws, mnt := tempWorkspace(t)
	installContainerPlugin(t, home)
	secretFile := filepath.Join(home, "registry.token")
	if err := os.WriteFile(secretFile, []byte(fileValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "policy.json"), []byte(fmt.Sprintf(`{
		"backends": {"container": {"network": {"allow": ["registry.example.test"], "hosts": {"registry.example.test": %q}}}},
		"secrets": {
			"api": {"from_env": "CFS_TEST_DAEMON_TOKEN", "backends": ["container"], "env": "API_TOKEN"},
			"registry": {"from_file": %q, "backends": ["container"],
				"inject": {"hosts": ["registry.example.test"], "header": "Authorization", "format": "Bearer {}"}}
		}
	}`, tn.addr, secretFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitNoPlugins(t, ws, 10*time.Second) })
	mp := startMount(t, home, ws, mnt)
	exec := func(backend, script string) result {
		t.Helper()
		r, err := runCfs(home, "", nil, "exec", "-w", ws, "-b", backend, "--", script)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := exec("container", "echo token=$API_TOKEN; curl -sS -m 10 http://registry.example.test:8080/; base64 -w0 /proc/self/environ; echo; echo $API_TOKEN >&2; echo $API_TOKEN > /workspace/leak.txt")
	if r.code != 0 {
		t.Fatalf("exec: %v", r)
	}
	if got := auth.Load().(string); got != "Bearer "+fileValue {
		t.Errorf("the server got Authorization %q, want the injected secret", got)
	}
	for _, w := range []string{"token=[secret api]", `REGISTRY-OK auth="Bearer [secret registry]"`} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q: %v", w, r)
		}
	}
	if strings.TrimSpace(r.stderr) != "[secret api]" {
		t.Errorf("stderr: %q", r.stderr)
	}
	// The environment, as the container had it (base64: not redacted).
	var environ string
	for _, line := range strings.Split(r.stdout, "\n") {
		if b, err := base64.StdEncoding.DecodeString(line); err == nil && strings.Contains(string(b), "PATH=") {
			environ = string(b)
		}
	}
	if !strings.Contains(environ, "API_TOKEN="+envValue) || strings.Contains(environ, fileValue) {
		t.Errorf("the container's environment: API_TOKEN given %v, the injected secret in it %v", strings.Contains(environ, "API_TOKEN="+envValue), strings.Contains(environ, fileValue))
	}
	// What the exec wrote to the workspace is its own (not redacted: the
	// policy gave it the value).
	if b, _ := os.ReadFile(filepath.Join(mnt, "leak.txt")); string(b) != envValue+"\n" {
		t.Errorf("leak.txt: %q", b)
	}
	// A backend not granted them.
	if r := exec("shell", "echo [$API_TOKEN]"); r.stdout != "[]\n" {
		t.Errorf("the shell got a secret: %v", r)
	}
	// An argv holding a value is redacted in the records.
	exec("container", "true "+envValue)

	var everywhere strings.Builder
	for _, args := range [][]string{{"audit", "-w", ws, "--json"}, {"execs", "-w", ws, "--json"}} {
		r := cli(t, home, args...)
		if r.code != 0 {
			t.Fatalf("%v: %v", args, r)
		}
		everywhere.WriteString(r.stdout)
	}
	if !strings.Contains(everywhere.String(), "API_TOKEN") || !strings.Contains(everywhere.String(), "secret headers added: Authorization") {
		t.Errorf("the records lack the variable's name or the injection's verdict:\n%s", everywhere.String())
	}
	if b, err := os.ReadFile(execLogPath(ws)); err == nil {
		everywhere.Write(b)
	}
	everywhere.WriteString(mp.output())
	for _, v := range []string{envValue, fileValue} {
		if strings.Contains(everywhere.String(), v) {
			t.Errorf("a secret value is in the records or logs:\n%s", everywhere.String())
		}
	}
}
