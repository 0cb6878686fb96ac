package fusefs_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/computerfs/computerfs/fs"
	"github.com/computerfs/computerfs/fusefs"
)

// TestShutdown: Detached tells of a umount from outside even while another
// mount namespace keeps the connection, and Shutdown ends the connection
// within its context, aborting it when it is held elsewhere.
func TestShutdown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("FUSE mount tests run as root")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	for _, tc := range []struct {
		name    string
		held    bool // a process in another mount namespace holds a copy
		outside int  // umount(2) flags from outside, -1 for none
	}{
		{"Shutdown", false, -1},
		{"Shutdown, held elsewhere", true, -1},
		{"umount", false, 0},
		{"lazy umount", false, syscall.MNT_DETACH},
		{"umount, held elsewhere", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mnt := filepath.Join(dir, "mnt")
			if err := os.Mkdir(mnt, 0o755); err != nil {
				t.Fatal(err)
			}
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			f, err := fs.Open(filepath.Join(dir, "ws.cfs"), fs.Options{Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := fusefs.Mount(f, mnt, fusefs.Options{Logger: log})
			if err != nil {
				f.Close()
				t.Fatal(err)
			}
			t.Cleanup(func() {
				select {
				case <-srv.Done():
				default:
					srv.Abort()
					<-srv.Done()
				}
				syscall.Unmount(mnt, syscall.MNT_DETACH)
				if err := f.Close(); err != nil {
					t.Errorf("close the store: %v", err)
				}
			})
			if tc.held {
				holder := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "120")
				if err := holder.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					holder.Process.Kill()
					holder.Wait()
				})
				// Its namespace has the copy once it runs sleep.
				for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
					if exe, _ := os.Readlink("/proc/" + strconv.Itoa(holder.Process.Pid) + "/exe"); filepath.Base(exe) == "sleep" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the holder did not start")
					}
				}
			}
			if tc.outside >= 0 {
				if err := syscall.Unmount(mnt, tc.outside); err != nil {
					t.Fatalf("umount from outside: %v", err)
				}
				select {
				case <-srv.Detached():
				case <-time.After(5 * time.Second):
					t.Fatal("Detached not closed 5s after the umount from outside")
				}
				if tc.held {
					select {
					case <-srv.Done():
						t.Fatal("the connection ended though another namespace holds the mount")
					case <-time.After(200 * time.Millisecond):
					}
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("Shutdown took %v", took)
			}
			select {
			case <-srv.Done():
			default:
				t.Fatal("the connection is still served after Shutdown")
			}
			select {
			case <-srv.Detached():
			case <-time.After(2 * time.Second):
				t.Error("Detached not closed after Shutdown")
			}
			var st syscall.Statfs_t
			if err := syscall.Statfs(mnt, &st); err != nil {
				t.Errorf("statfs %s after Shutdown: %v (a dead mount left)", mnt, err)
			}
		})
	}
}
