// Package remote moves workspaces to and from S3-compatible object
// storage (issue 18): push uploads a snapshot's chunks (only those the
// bucket lacks) and a manifest of its tree; clone and pull rebuild a
// workspace from them in another store, verifying every chunk by its
// content ID and the result against the snapshot's root identifier.
//
// It owns the remote format (FORMAT.md: chunk objects shared by every
// workspace in a bucket, manifests, refs) and the remotes file beside a
// workspace (WS.remotes.json). It reads and builds workspaces only
// through fs (ExportSnapshot, ImportTree, chunkstore reads of chunks by
// ID) and never touches a store's buckets itself; it knows nothing of
// FUSE, daemons or the command line.
package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/computerfs/computerfs/chunkstore"
)

// Location is where a workspace lives on a remote: s3://BUCKET/PREFIX.
// Its manifests and refs are under PREFIX; chunks are under chunks/ at
// the bucket's top, shared by every workspace of the bucket.
type Location struct {
	Bucket, Prefix string
}

// ParseURL parses s3://BUCKET/PREFIX. PREFIX is required (it names the
// workspace), is cleaned of leading and trailing slashes, and may not
// be or start with "chunks", nor hold empty, "." or ".." segments.
func ParseURL(s string) (Location, error) {
	u, err := url.Parse(s)
	if err != nil {
		return Location{}, fmt.Errorf("remote URL %q: %w", s, err)
	}
	if u.Scheme != "s3" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return Location{}, fmt.Errorf("remote URL %q: want s3://BUCKET/PREFIX", s)
	}
	p := strings.Trim(u.Path, "/")
	if p == "" {
		return Location{}, fmt.Errorf("remote URL %q: no PREFIX: s3://BUCKET/PREFIX names a workspace within the bucket", s)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return Location{}, fmt.Errorf("remote URL %q: bad path segment %q", s, seg)
		}
	}
	if p == "chunks" || strings.HasPrefix(p, "chunks/") {
		return Location{}, fmt.Errorf("remote URL %q: chunks/ holds the bucket's chunks; choose another PREFIX", s)
	}
	return Location{Bucket: u.Host, Prefix: p}, nil
}

func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Prefix }

// Remote is a named remote of a workspace.
type Remote struct {
	URL      string `json:"url"`
	Endpoint string `json:"endpoint,omitempty"`
	Region   string `json:"region,omitempty"`
	// KeyFile, if set, is the key the remote's objects are encrypted
	// with (crypt.go); the key stays on this host.
	KeyFile string `json:"key_file,omitempty"`
}

// Cursor is what a workspace last synced with on a remote: the ref its
// last push wrote or its clone or pull read.
type Cursor struct {
	Manifest string `json:"manifest"`
	Root     string `json:"root"`
	Snapshot string `json:"snapshot"`
	At       string `json:"at"`
	// Pending is a push's new HEAD, recorded before HEAD is written: if
	// HEAD names it later, that push landed.
	Pending *Cursor `json:"pending,omitempty"`
}

// Config is a workspace's remotes file, WS.remotes.json beside its
// store. Credentials are never in it: they come from the standard AWS
// variables and files.
type Config struct {
	Remotes map[string]Remote `json:"remotes"`
	Cursors map[string]Cursor `json:"cursors,omitempty"`
	// Heads are the newest HEAD seen on each remote (by name): a HEAD
	// older than it is refused (ErrRollback).
	Heads map[string]HeadSeen `json:"heads,omitempty"`
	// Snaps are the refs of pushed snapshots seen on each remote (by
	// remote name, then snapshot name): a ref that changed is refused
	// (ErrRollback; heads.go).
	Snaps map[string]map[string]HeadSeen `json:"snapshots_seen,omitempty"`
}

// ConfigPath is the remotes file of workspace ws.
func ConfigPath(ws string) string {
	abs, err := filepath.Abs(ws)
	if err != nil {
		abs = ws
	}
	return abs + ".remotes.json"
}

// LoadConfig reads ws's remotes file; none is an empty config.
func LoadConfig(ws string) (*Config, error) {
	c := &Config{Remotes: map[string]Remote{}, Cursors: map[string]Cursor{}, Heads: map[string]HeadSeen{}}
	b, err := os.ReadFile(ConfigPath(ws))
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read remotes: %w", err)
	}
	if err := json.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("read remotes %s: %w", ConfigPath(ws), err)
	}
	if c.Remotes == nil {
		c.Remotes = map[string]Remote{}
	}
	if c.Cursors == nil {
		c.Cursors = map[string]Cursor{}
	}
	if c.Heads == nil {
		c.Heads = map[string]HeadSeen{}
	}
	return c, nil
}

// Save writes ws's remotes file atomically (a new file renamed over it,
// synced).
func (c *Config) Save(ws string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(ConfigPath(ws), append(b, '\n'))
}

func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// validName is a remote's name: 1 to 64 of [A-Za-z0-9._-], not starting with "." or "-".
func validName(n string) error {
	if n == "" || len(n) > 64 || n[0] == '.' || n[0] == '-' {
		return fmt.Errorf("remote name %q: want 1 to 64 letters, digits, '.', '_' or '-', not starting with '.' or '-'", n)
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("remote name %q: want 1 to 64 letters, digits, '.', '_' or '-'", n)
		}
	}
	return nil
}

// Add records remote name of workspace ws. An existing name is refused.
func Add(ws, name string, r Remote) error {
	if err := validName(name); err != nil {
		return err
	}
	if _, err := ParseURL(r.URL); err != nil {
		return err
	}
	if r.Endpoint != "" {
		if u, err := url.Parse(r.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("endpoint %q: want http(s)://HOST[:PORT]", r.Endpoint)
		}
	}
	c, err := LoadConfig(ws)
	if err != nil {
		return err
	}
	if _, ok := c.Remotes[name]; ok {
		return fmt.Errorf("remote %s exists (%s)", name, c.Remotes[name].URL)
	}
	c.Remotes[name] = r
	return c.Save(ws)
}

// Retry bounds the retries of each request: exponential backoff from
// Base, doubling up to Max, with jitter, for at most Attempts tries.
type Retry struct {
	Attempts  int
	Base, Max time.Duration
}

// DefaultRetry rides out a server gone for about a minute.
var defaultRetry = Retry{Attempts: 12, Base: 200 * time.Millisecond, Max: 10 * time.Second}

// ClientOptions configure a Client.
type ClientOptions struct {
	Endpoint, Region string
	// Credentials, if set, replace the standard AWS chain (tests).
	Credentials aws.CredentialsProvider
	Retry       Retry
	// Key, if set, encrypts and authenticates every object (crypt.go).
	Key []byte
	// Concurrency is the number of requests in flight (8 if 0).
	Concurrency int
	// HeadBook, if set, is a file (the user's) where the newest HEAD
	// seen of every remote is kept, so that a clone, which has no
	// workspace to remember it in, detects a HEAD rolled back too.
	HeadBook string
}

// Client reaches one Location.
type Client struct {
	s3    *s3.Client
	pre   *s3.PresignClient
	loc   Location
	retry Retry
	conc  int
	enc   *crypter
	// endpoint and book: where the HEADs seen are kept (heads.go).
	endpoint, book string
}

// NewClient makes a client of loc. Credentials come from the standard
// AWS variables and files unless opts gives them.
func NewClient(ctx context.Context, loc Location, opts ClientOptions) (*Client, error) {
	var lo []func(*config.LoadOptions) error
	if opts.Region != "" {
		lo = append(lo, config.WithRegion(opts.Region))
	}
	if opts.Credentials != nil {
		lo = append(lo, config.WithCredentialsProvider(opts.Credentials))
	}
	// One attempt per SDK call: retries are ours, bounded and logged.
	lo = append(lo, config.WithRetryMaxAttempts(1))
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("remote %s: AWS configuration: %w", loc, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	cl := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
			o.UsePathStyle = true
		}
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	c := &Client{s3: cl, pre: s3.NewPresignClient(cl), loc: loc, retry: opts.Retry, conc: opts.Concurrency, endpoint: opts.Endpoint, book: opts.HeadBook}
	if c.retry.Attempts == 0 {
		c.retry = defaultRetry
	}
	if c.conc == 0 {
		c.conc = 8
	}
	if opts.Key != nil {
		if c.enc, err = newCrypter(opts.Key); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ClientFor makes the client of a configured remote.
func ClientFor(ctx context.Context, r Remote, opts ClientOptions) (*Client, error) {
	loc, err := ParseURL(r.URL)
	if err != nil {
		return nil, err
	}
	if opts.Endpoint == "" {
		opts.Endpoint = r.Endpoint
	}
	if opts.Region == "" {
		opts.Region = r.Region
	}
	if r.KeyFile != "" && opts.Key == nil {
		if opts.Key, err = ReadKey(r.KeyFile); err != nil {
			return nil, err
		}
	}
	return NewClient(ctx, loc, opts)
}

// Location is where the client points.
func (c *Client) Location() Location { return c.loc }

func (c *Client) chunkKey(id chunkstore.ID) string {
	name := id.String()
	if c.enc != nil {
		name = c.enc.objectID(id)
	}
	return "chunks/" + name[:2] + "/" + name
}

func (c *Client) key(rel string) string        { return c.loc.Prefix + "/" + rel }
func (c *Client) manifestKey(id string) string { return c.key("manifests/" + id) }

// status is the HTTP status of a failed request, 0 if none came back.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// retryable says whether a failure may pass: no answer (the server is
// down or the connection broke), a 5xx, 408 or 429.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errNotFound) || errors.Is(err, ErrConflict) || errors.Is(err, ErrFormat) {
		return false
	}
	switch s := status(err); {
	case s == 0:
		return true
	case s >= 500, s == 408, s == 429:
		return true
	}
	return false
}

// do runs op until it succeeds, fails for good, or the attempts are
// spent, sleeping a bounded exponential backoff with jitter between.
func (c *Client) do(ctx context.Context, what string, op func(ctx context.Context) error) error {
	delay := c.retry.Base
	var err error
	for attempt := 1; ; attempt++ {
		if err = op(ctx); err == nil || !retryable(err) || attempt >= c.retry.Attempts {
			break
		}
		d := delay/2 + time.Duration(rand.Int64N(int64(delay/2)+1))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (after %v)", what, ctx.Err(), err)
		case <-time.After(d):
		}
		delay = min(delay*2, c.retry.Max)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// errNotFound is a missing object.
var errNotFound = errors.New("not found")

// get reads an object whole, with its ETag. A missing one is errNotFound.
func (c *Client) get(ctx context.Context, key string, limit int64) (data []byte, etag string, err error) {
	err = c.do(ctx, "get "+key, func(ctx context.Context) error {
		out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: &c.loc.Bucket, Key: &key})
		if status(err) == 404 {
			return errNotFound
		}
		if err != nil {
			return err
		}
		defer out.Body.Close()
		data, err = io.ReadAll(io.LimitReader(out.Body, limit+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > limit {
			return fmt.Errorf("object of more than %d bytes: %w", limit, ErrFormat)
		}
		etag = aws.ToString(out.ETag)
		return nil
	})
	return data, etag, err
}

// has says whether an object exists.
func (c *Client) has(ctx context.Context, key string) (bool, error) {
	var ok bool
	err := c.do(ctx, "head "+key, func(ctx context.Context) error {
		_, err := c.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &c.loc.Bucket, Key: &key})
		if s := status(err); s == 404 {
			ok = false
			return nil
		}
		ok = err == nil
		return err
	})
	return ok, err
}

// ErrConflict is the cause of a push refused because the remote moved
// since the workspace last synced with it, or a write raced another.
var ErrConflict = errors.New("remote changed")

// ErrRollback is the cause of a transfer refused because the remote's
// HEAD is older than one this workspace (or this user) saw there, or a
// pushed snapshot's ref is not the one seen (heads.go): the remote, or
// someone with access to its bucket, rolled it back or rewrote it.
var ErrRollback = errors.New("remote ref rolled back")

// put writes an object. ifMatch, if set, makes it conditional on the
// object's ETag ("*" for: only if absent, sent as If-None-Match).
func (c *Client) put(ctx context.Context, key string, data []byte, ifMatch string) error {
	return c.do(ctx, "put "+key, func(ctx context.Context) error {
		in := &s3.PutObjectInput{Bucket: &c.loc.Bucket, Key: &key, Body: bytesReader(data), ContentLength: aws.Int64(int64(len(data)))}
		switch ifMatch {
		case "":
		case "*":
			in.IfNoneMatch = aws.String("*")
		default:
			in.IfMatch = aws.String(ifMatch)
		}
		_, err := c.s3.PutObject(ctx, in)
		if s := status(err); s == 412 || s == 409 {
			return fmt.Errorf("%w: %v", ErrConflict, err)
		}
		return err
	})
}

// sealChunk is a chunk object as stored: encrypted when the client has
// a key.
func (c *Client) sealChunk(id chunkstore.ID, obj []byte) []byte {
	if c.enc == nil {
		return obj
	}
	return c.enc.seal("chunk "+c.enc.objectID(id), obj)
}

// openChunk decrypts a stored chunk object (when the client has a key).
func (c *Client) openChunk(id chunkstore.ID, b []byte) ([]byte, error) {
	if c.enc == nil {
		if isSealed(b) {
			return nil, fmt.Errorf("chunk %s: %w", id, ErrEncrypted)
		}
		return b, nil
	}
	return c.enc.open("chunk "+c.enc.objectID(id), b)
}

// getRef reads ref rel (HEAD, snapshots/NAME) with its ETag.
func (c *Client) getRef(ctx context.Context, rel string) (Ref, string, error) {
	b, etag, err := c.get(ctx, c.key(rel), 1<<20)
	if err != nil {
		return Ref{}, "", err
	}
	if c.enc != nil {
		if b, err = c.enc.open("ref "+rel, b); err != nil {
			return Ref{}, "", err
		}
	} else if isSealed(b) {
		return Ref{}, "", fmt.Errorf("%s: %w: give its key (--key-file)", rel, ErrEncrypted)
	}
	r, err := decodeRef(b)
	return r, etag, err
}

// putRef writes ref rel, conditionally as put does.
func (c *Client) putRef(ctx context.Context, rel string, r Ref, ifMatch string) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if c.enc != nil {
		b = c.enc.seal("ref "+rel, b)
	}
	return c.put(ctx, c.key(rel), b, ifMatch)
}

// putManifest writes an encoded manifest (sealed when the client has a
// key) under its MID, the hash of what is stored.
func (c *Client) putManifest(ctx context.Context, mb []byte) (string, int, error) {
	if c.enc != nil {
		mb = c.enc.seal("manifest", mb)
	}
	mid := ManifestID(mb)
	return mid, len(mb), c.put(ctx, c.manifestKey(mid), mb, "")
}
