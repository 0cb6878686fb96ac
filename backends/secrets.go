package backends

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/computerfs/computerfs/audit"
	"github.com/computerfs/computerfs/egress"
)

// Secrets (issue 17): named values the policy grants to listed backends,
// read by the daemon from a file or its own environment:
//
//	"secrets": {
//	  "npm":      {"from_env": "NPM_TOKEN", "backends": ["container"], "env": "NPM_TOKEN"},
//	  "registry": {"from_file": "/etc/computerfs/registry.token", "backends": ["container"],
//	               "inject": {"hosts": ["registry.example.test"], "header": "Authorization", "format": "Bearer {}"}}
//	}
//
// A secret reaches an exec of a granted backend as the environment
// variable "env", or (better: the value never enters the sandbox) is
// added by the backend's egress proxy as a header of the plain HTTP
// requests to "hosts" ("format"'s {} is the value; HTTPS goes through a
// tunnel the proxy does not open, so nothing is added there). Values are
// read when the policy is loaded (a missing one refuses the policy) and
// are never written: the audit log and exec records hold environment
// names only, and every exec's output, its exit reason and the errors
// and records the runtime makes have each value (of every secret, at
// least 8 bytes long) replaced by [secret NAME].

// SecretPolicy is one secret.
type SecretPolicy struct {
	FromFile string        `json:"from_file,omitempty"`
	FromEnv  string        `json:"from_env,omitempty"`
	Backends []string      `json:"backends"`
	Env      string        `json:"env,omitempty"`
	Inject   *SecretInject `json:"inject,omitempty"`
}

// SecretInject says where the egress proxy adds a secret.
type SecretInject struct {
	Hosts  []string `json:"hosts"`
	Header string   `json:"header"`
	Format string   `json:"format,omitempty"`
}

// minSecret is the shortest value accepted: shorter ones would make the
// redaction of output mangle ordinary text.
const minSecret = 8

type secret struct {
	name, value, env, header, format string
	backends                         map[string]bool
	inject                           *egress.Allow
}

func (s secret) granted(id string) bool { return s.backends[id] }

func (s secret) headerValue() string {
	if s.format == "" {
		return s.value
	}
	return strings.ReplaceAll(s.format, "{}", s.value)
}

// checkSecrets refuses malformed secret entries (without reading
// values).
func checkSecrets(pol Policy) error {
	for name, sp := range pol.Secrets {
		if name == "" || strings.ContainsAny(name, " \t\n[]") {
			return fmt.Errorf("secret %q: a bad name", name)
		}
		if (sp.FromFile == "") == (sp.FromEnv == "") {
			return fmt.Errorf("secret %s: give exactly one of from_file and from_env", name)
		}
		if len(sp.Backends) == 0 {
			return fmt.Errorf("secret %s: no backends are granted it", name)
		}
		if sp.Env == "" && sp.Inject == nil {
			return fmt.Errorf("secret %s: give env (the variable an exec gets) or inject (the proxy adds it)", name)
		}
		if sp.Env != "" && (strings.ContainsAny(sp.Env, "=\x00") || sp.Env == "PATH") {
			return fmt.Errorf("secret %s: bad env name %q", name, sp.Env)
		}
		if sp.Inject != nil {
			if _, err := egress.ParseAllow(sp.Inject.Hosts); err != nil || len(sp.Inject.Hosts) == 0 {
				return fmt.Errorf("secret %s: inject hosts: want a list of hosts: %v", name, err)
			}
			if sp.Inject.Header == "" || strings.ContainsAny(sp.Inject.Header, " :\r\n") {
				return fmt.Errorf("secret %s: inject header %q: want a header name", name, sp.Inject.Header)
			}
			for _, id := range sp.Backends {
				if n := pol.Backends[id].Network; n == nil || n.Mode != "proxy" {
					return fmt.Errorf("secret %s: injected for backend %s, whose network is not an allow-list (no proxy)", name, id)
				}
			}
		}
	}
	return nil
}

// loadSecrets reads the values of pol's secrets.
func loadSecrets(pol Policy) ([]secret, error) {
	names := make([]string, 0, len(pol.Secrets))
	for n := range pol.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []secret
	for _, name := range names {
		sp := pol.Secrets[name]
		s := secret{name: name, env: sp.Env, backends: map[string]bool{}}
		for _, id := range sp.Backends {
			s.backends[id] = true
		}
		if sp.FromFile != "" {
			b, err := os.ReadFile(sp.FromFile)
			if err != nil {
				// The path, not the content: an error never holds a value.
				return nil, fmt.Errorf("secret %s: read %s: %w", name, sp.FromFile, errors.Unwrap(err))
			}
			s.value = strings.TrimRight(string(b), "\r\n")
		} else {
			v, ok := os.LookupEnv(sp.FromEnv)
			if !ok {
				return nil, fmt.Errorf("secret %s: the daemon's environment has no %s", name, sp.FromEnv)
			}
			s.value = v
		}
		if len(s.value) < minSecret {
			return nil, fmt.Errorf("secret %s: shorter than %d bytes (too short to redact from output)", name, minSecret)
		}
		if strings.ContainsAny(s.value, "\x00\r\n") && sp.Inject != nil {
			return nil, fmt.Errorf("secret %s: a header value cannot hold a line break or NUL", name)
		}
		if sp.Inject != nil {
			s.inject, _ = egress.ParseAllow(sp.Inject.Hosts)
			s.header, s.format = sp.Inject.Header, sp.Inject.Format
		}
		out = append(out, s)
	}
	return out, nil
}

// secretEnv adds the secrets granted to backend id as variables to env.
func (c *compiledPolicy) secretEnv(id string, env map[string]string) {
	for _, s := range c.secrets {
		if s.env != "" && s.granted(id) {
			env[s.env] = s.value
		}
	}
}

// redact replaces every secret's value in s.
func (c *compiledPolicy) redact(s string) string {
	if c == nil {
		return s
	}
	for _, x := range c.secrets {
		if strings.Contains(s, x.value) {
			s = strings.ReplaceAll(s, x.value, "[secret "+x.name+"]")
		}
	}
	return s
}

// redactor is an exec's output with the secrets' values replaced. It
// holds back the last bytes that could begin a value until more come,
// or Flush.
type redactor struct {
	mu   sync.Mutex
	w    io.Writer
	c    *compiledPolicy
	keep int // longest value - 1
	buf  []byte
}

func newRedactor(w io.Writer, c *compiledPolicy) io.Writer {
	if c == nil || len(c.secrets) == 0 || w == nil {
		return w
	}
	r := &redactor{w: w, c: c}
	for _, s := range c.secrets {
		r.keep = max(r.keep, len(s.value)-1)
	}
	return r
}

func (r *redactor) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	for _, s := range r.c.secrets {
		if bytes.Contains(r.buf, []byte(s.value)) {
			r.buf = bytes.ReplaceAll(r.buf, []byte(s.value), []byte("[secret "+s.name+"]"))
		}
	}
	if n := len(r.buf) - r.keep; n > 0 {
		// The bytes held back are a suffix that could begin a value; a
		// replacement's text ([secret ...]) never does.
		if _, err := r.w.Write(r.buf[:n]); err != nil {
			return 0, err
		}
		r.buf = append(r.buf[:0], r.buf[n:]...)
	}
	return len(p), nil
}

// Flush writes what was held back.
func (r *redactor) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) == 0 {
		return nil
	}
	_, err := r.w.Write(r.buf)
	r.buf = r.buf[:0]
	return err
}

// flushOutput flushes w if it is a redactor.
func flushOutput(w io.Writer) {
	if r, ok := w.(*redactor); ok {
		r.Flush()
	}
}

// auditRec appends rec to the audit log with the secrets' values taken
// out of every string a caller could have put one in.
func (r *Runtime) auditRec(rec audit.Record) {
	c := r.compiled.Load()
	if c != nil && len(c.secrets) > 0 {
		rec.Detail = c.redact(rec.Detail)
		rec.Path = c.redact(rec.Path)
		rec.Cwd = c.redact(rec.Cwd)
		rec.File = c.redact(rec.File)
		rec.Reason = c.redact(rec.Reason)
		if len(rec.Argv) > 0 {
			argv := make([]string, len(rec.Argv))
			for i, a := range rec.Argv {
				argv[i] = c.redact(a)
			}
			rec.Argv = argv
		}
	}
	r.opts.WS.Audit(rec)
}

// timeNow is time.Now (one place for the verdicts' clock).
func timeNow() time.Time { return time.Now() }
