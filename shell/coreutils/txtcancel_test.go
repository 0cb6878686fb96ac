package coreutils

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// txtEndless is an endless stdin.
type txtEndless struct{}

func (txtEndless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "ab\n"[i%3]
	}
	return len(p), nil
}

// txtFailWriter fails with a closed pipe after n bytes.
type txtFailWriter struct{ n int }

func (w *txtFailWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		return 0, io.ErrClosedPipe
	}
	w.n -= len(p)
	return len(p), nil
}

// TestTextCancel checks that commands reading an endless input stop
// when the context is cancelled.
func TestCatFamilyCancel(t *testing.T) {
	tree := makeTree(t)
	for _, args := range [][]string{
		{"cat"}, {"cat", "-n"}, {"head", "-n", "-1"}, {"head", "-c", "-5"}, {"tail"}, {"tail", "-c", "5"},
		{"tail", "-n", "+2"}, {"wc"}, {"wc", "-l"}, {"sort"}, {"uniq"}, {"cut", "-c1"}, {"tr", "a", "b"},
		{"tee"}, {"base64"}, {"base64", "-d", "-i"}, {"md5sum"}, {"sha256sum"}, {"seq", "inf"}, {"seq", "1", "0.5", "inf"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		f, _ := Lookup(args[0])
		e := testEnv(tree, "/", txtEndless{}, io.Discard, io.Discard)
		done := make(chan int, 1)
		go func() { done <- f(ctx, e, args) }()
		select {
		case code := <-done:
			if code == 0 {
				t.Errorf("%q: status 0 after cancellation", args)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%q: still running 5s after cancellation", args)
		}
		cancel()
	}
}

// TestTextClosedPipe checks that writers stop on a closed pipe.
func TestCatFamilyClosedPipe(t *testing.T) {
	tree := makeTree(t)
	for _, args := range [][]string{{"seq", "inf"}, {"seq", "0", "0.5", "inf"}, {"cat"}, {"cat", "-n"}, {"tr", "a", "b"}, {"tee"}, {"cut", "-c1"}, {"base64"}, {"head", "-n", "-1"}, {"head", "-c", "-1"}, {"tail", "-n", "+1"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		f, _ := Lookup(args[0])
		var errb bytes.Buffer
		e := testEnv(tree, "/", txtEndless{}, &txtFailWriter{100000}, &errb)
		code := f(ctx, e, args)
		if ctx.Err() != nil || code != 141 || errb.Len() != 0 {
			t.Errorf("%q on a closed pipe: status %d, ctx %v, stderr %q", args, code, ctx.Err(), errb.String())
		}
		cancel()
	}
}

// TestTextBigStream checks that head and tail stream a big input in
// little memory and give the right ends.
func TestHeadTailBigStream(t *testing.T) {
	tree := makeTree(t)
	big := strings.Repeat("0123456789\n", 200000)
	if o := runOurs(t, tree, big, "tail", "-n", "2"); o.stdout != "0123456789\n0123456789\n" {
		t.Errorf("tail -n 2: %q", o.stdout)
	}
	if o := runOurs(t, tree, big, "head", "-c", "-2200000"); o.stdout != "" || o.code != 0 {
		t.Errorf("head -c -2200000: %d bytes", len(o.stdout))
	}
	if o := runOurs(t, tree, big, "head", "-c", "-2199990"); o.stdout != "0123456789" {
		t.Errorf("head -c -2199990: %q", o.stdout)
	}
	if o := runOurs(t, tree, big, "head", "-n", "-199999"); o.stdout != "0123456789\n" {
		t.Errorf("head -n -199999: %q", o.stdout)
	}
}
