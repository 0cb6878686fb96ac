package fusefs_test

import (
	"sort"
	"testing"

	"github.com/computerfs/computerfs/internal/testmount"
	"github.com/hanwen/go-fuse/v2/posixtest"
)

// notPOSIX lists suite tests whose expectation POSIX itself contradicts,
// with the reason. Each is covered by a test of ours that checks what POSIX
// does require.
var notPOSIX = map[string]string{
	// It takes a write lock through one descriptor and expects a read lock
	// through a second descriptor of the same process to fail. POSIX
	// record locks belong to the process, so the second succeeds; ext4
	// answers exactly as we do. TestLocks checks conflicts between
	// processes and between OFD locks.
	"FcntlFlockLocksFile": "expects a process to conflict with its own POSIX lock; ext4 does not either (see TestLocks)",
}

// TestPosix runs go-fuse's POSIX conformance suite against a real mount,
// each test on a fresh workspace that fsck must find clean afterwards.
func TestPosix(t *testing.T) {
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if reason, ok := notPOSIX[name]; ok {
				t.Skip(reason)
			}
			m := testmount.New(t, testmount.Options{})
			posixtest.All[name](t, m.Dir)
		})
	}
}
