package plugincheck

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// ownerEnv is how the host marks the processes of its plugins (backends).
const ownerEnv = "COMPUTERFS_PLUGIN_OWNER"

// owned lists the live processes marked with owner: the plugin and
// anything it started that kept its environment.
func owned(owner string) []int {
	want := []byte(ownerEnv + "=" + owner + "\x00")
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if s := string(st); strings.Contains(s, ") Z ") || strings.Contains(s, ") X ") {
				continue // exited, not reaped yet
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// killOwned kills what owned finds.
func killOwned(owner string) {
	for _, pid := range owned(owner) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// lockedBuf collects the runtime's log, written from plugin goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
