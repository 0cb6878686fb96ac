// Package s3test starts a real S3 server for tests: versitygw's posix
// gateway over a temporary directory, on a free loopback port, stopped
// at the test's cleanup. It owns nothing but that process and its
// directory. Without the versitygw binary the test is skipped, with
// the command that installs it, unless CFS_REQUIRE_S3=1 (as .ci/run
// sets), which fails it instead.
package s3test

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Install is the command that installs the server the tests use.
const Install = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Server is a running versitygw.
type Server struct {
	t        testing.TB
	bin, dir string
	addr     string
	cmd      *exec.Cmd
	done     chan struct{}
	// Endpoint is its URL; AccessKey and SecretKey its root user's
	// credentials; Region the region it answers for.
	Endpoint, AccessKey, SecretKey, Region string
}

// Binary finds versitygw: on PATH, else in GOBIN or GOPATH/bin.
func Binary() (string, bool) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, true
	}
	var dirs []string
	if d := os.Getenv("GOBIN"); d != "" {
		dirs = append(dirs, d)
	}
	if d := os.Getenv("GOPATH"); d != "" {
		dirs = append(dirs, filepath.Join(d, "bin"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, "go", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "versitygw")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// Start starts a server with no buckets; Stop is registered as cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, ok := Binary()
	if !ok {
		if os.Getenv("CFS_REQUIRE_S3") == "1" {
			t.Fatalf("versitygw not found (CFS_REQUIRE_S3=1): %s", Install)
		}
		t.Skipf("versitygw not found: %s", Install)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{t: t, bin: bin, dir: t.TempDir(), addr: addr,
		Endpoint: "http://" + addr, AccessKey: "cfstestaccess", SecretKey: "cfstestsecret0123456789", Region: "us-east-1"}
	s.Restart()
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again, on the same port and directory, if
// stopped; it waits until it answers.
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	cmd := exec.Command(s.bin, "--port", s.addr, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region, "--quiet", "posix", s.dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start versitygw: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) { cmd.Wait(); close(done) }(s.done)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.Endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		select {
		case <-s.done:
			s.cmd = nil
			s.t.Fatalf("versitygw exited at start: %v", cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("versitygw did not answer on %s: %v", s.addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (its process group) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Client is an S3 client of the server, with its root credentials.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       s.Region,
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
	})
}

// Bucket creates a bucket and returns its name.
func (s *Server) Bucket(name string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		s.t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// Dir is the directory the server keeps its buckets in (bucket B's
// object K is the file Dir/B/K): tests damage objects there.
func (s *Server) Dir() string { return s.dir }

// Env is the environment a client process needs: credentials and
// region as the AWS variables.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + s.AccessKey, "AWS_SECRET_ACCESS_KEY=" + s.SecretKey, "AWS_REGION=" + s.Region}
}
