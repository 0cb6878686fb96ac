package coreutils

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestSleepGNU(t *testing.T) {
	tree := makeTree(t)
	txtRun(t, tree, []txtCase{
		txtC("sleep", "0"),
		txtC("sleep", "0.01", "0.01s", "0m", "0h", "0d"),
		txtC("sleep", ".001"),
		txtC("sleep", "1e-3"),
		txtC("sleep", "0x1p-10"),
		txtC("sleep", " 0"),
		txtC("sleep", "0 "),
		txtC("sleep"),
		txtC("sleep", "x"),
		txtC("sleep", "-1"),
		txtC("sleep", "1x", "2y"),
		txtC("sleep", "1ss"),
		txtC("sleep", ""),
		txtC("sleep", "nan"),
		txtC("sleep", "--", "0"),
	})
}

func TestSleepCancel(t *testing.T) {
	f, _ := Lookup("sleep")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	e := testEnv(t.TempDir(), "/", strings.NewReader(""), &out, &errb)
	start := time.Now()
	code := f(ctx, e, []string{"sleep", "10"})
	if code != 130 || time.Since(start) > 2*time.Second {
		t.Errorf("sleep 10 under a 50ms context: status %d after %v", code, time.Since(start))
	}
	start = time.Now()
	if code := f(context.Background(), e, []string{"sleep", "0.05"}); code != 0 || time.Since(start) < 50*time.Millisecond {
		t.Errorf("sleep 0.05: status %d after %v", code, time.Since(start))
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if code := f(ctx2, e, []string{"sleep", "inf"}); code != 130 {
		t.Errorf("sleep inf: status %d", code)
	}
}
