package jsbackend

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/computerfs/computerfs/pluginapi"
	"github.com/computerfs/computerfs/pluginapi/pb"
)

func TestDescribe(t *testing.T) {
	d, err := (&Backend{}).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Id != "js" || len(d.Accepts) != 1 || d.Accepts[0] != "js-module" || d.Description == "" {
		t.Fatalf("%+v", d)
	}
	if d.DefaultLimits.MemoryBytes != 256<<20 || d.DefaultLimits.ResultBytes != 1<<20 || d.DefaultLimits.InputBytes != 1<<20 || d.MaxLimits.TimeoutMs == 0 {
		t.Fatalf("limits %+v %+v", d.DefaultLimits, d.MaxLimits)
	}
}

func TestLimitsOf(t *testing.T) {
	l := limitsOf(nil)
	if l.MemoryBytes != DefaultMemory || l.TimeoutMs != DefaultTimeout.Milliseconds() {
		t.Fatalf("%+v", l)
	}
	l = limitsOf(&pb.Limits{MemoryBytes: 1, ResultBytes: 10})
	if l.MemoryBytes != 4<<20 || l.ResultBytes != 10 || l.InputBytes != DefaultInputBytes {
		t.Fatalf("%+v", l)
	}
}

// The backend checks the input size itself too, not only the host.
func TestInputLimitInPlugin(t *testing.T) {
	x := &pluginapi.Exec{Start: &pb.ExecStart{Argv: []string{"export default (i) => i"}, InputJson: []byte(`"0123456789"`),
		Limits: &pb.Limits{InputBytes: 5}}, Stdout: io.Discard, Stderr: io.Discard, FS: &pluginapi.HostFS{}}
	exit, err := (&Backend{}).Exec(context.Background(), x)
	if err != nil || exit.ExitCode != 2 || !strings.Contains(exit.Reason, "structured input is 12 bytes, over the limit of 5") {
		t.Fatalf("%+v %v", exit, err)
	}
}
