package bench

import (
	"os"
	"testing"
)

// TestExt4Journal tells whether the temp directory's ext4 has a journal,
// as /proc/fs/jbd2 says, and the ext4 target's note says so.
func TestExt4Journal(t *testing.T) {
	dir := t.TempDir()
	if name, _, err := FSType(dir); err != nil || name != "ext4" {
		t.Skipf("%s is not on ext4", dir)
	}
	dev, journal, ok := ext4Journal(dir)
	if !ok {
		t.Skip("cannot tell: no device in the mount table")
	}
	_, err := os.Stat("/proc/fs/jbd2/" + dev + "-8")
	if journal != (err == nil) {
		t.Errorf("%s: journal %v, but /proc/fs/jbd2/%s-8: %v", dev, journal, dev, err)
	}
	tg, err := Ext4Target(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	t.Logf("%s: %s", dir, tg.Note)
}
