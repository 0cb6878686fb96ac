package jsbackend

import (
	"context"
	"testing"

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
