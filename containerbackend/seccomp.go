package containerbackend

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM under the default seccomp profile: they
// load kernel code, reach the kernel's keyrings, BPF or perf, change the
// host's clock, swap or accounting, reboot it, mount, or enter or make
// namespaces. A workload (build, test, git, an interpreter) needs none of
// them, and without CAP_SYS_ADMIN most would fail anyway; what is left is
// the attack surface of the kernel (unprivileged user namespaces, BPF,
// userfaultfd, keyctl). personality stays allowed: tools query it with
// 0xffffffff, and setarch uses it harmlessly.
var deniedSyscalls = []string{
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key",
	"open_by_handle_at", "name_to_handle_at", "reboot", "swapon", "swapoff", "acct",
	"settimeofday", "clock_settime", "clock_settime64", "clock_adjtime", "clock_adjtime64", "adjtimex",
	"syslog", "vhangup", "iopl", "ioperm", "lookup_dcookie", "quotactl", "quotactl_fd", "userfaultfd",
	"mount", "umount", "umount2", "pivot_root", "unshare", "setns",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
}

// nsCloneFlags are the clone(2) flags that make namespaces: clone with any
// of them fails like unshare does.
var nsCloneFlags = []uint64{
	unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC,
	unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET,
}

// seccompArchs are the syscall ABIs a process of this host can use: the
// native one and the compat ones, which must be filtered too or the
// denied calls would be reached through them (int 0x80 on x86_64).
func seccompArchs() []specs.Arch {
	switch runtime.GOARCH {
	case "amd64":
		return []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	case "386":
		return []specs.Arch{specs.ArchX86}
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	case "arm":
		return []specs.Arch{specs.ArchARM}
	case "riscv64":
		return []specs.Arch{specs.ArchRISCV64}
	case "ppc64le":
		return []specs.Arch{specs.ArchPPC64LE}
	case "s390x":
		return []specs.Arch{specs.ArchS390X, specs.ArchS390}
	}
	return nil // the native ABI only
}

// seccompProfile is the default profile: everything allowed but
// deniedSyscalls and namespace-making clones (EPERM), and clone3, whose
// flags a filter cannot see (ENOSYS, so that libc falls back to clone, as
// under Docker's default profile). supported are the architectures runc
// knows (nil: all of ours).
func seccompProfile(supported []string) *specs.LinuxSeccomp {
	eperm, enosys := uint(syscall.EPERM), uint(syscall.ENOSYS)
	p := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Syscalls: []specs.LinuxSyscall{
			{Names: deniedSyscalls, Action: specs.ActErrno, ErrnoRet: &eperm},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
		},
	}
	for _, a := range seccompArchs() {
		if supported == nil || contains(supported, string(a)) {
			p.Architectures = append(p.Architectures, a)
		}
	}
	// clone's flags are its first argument (the second on s390).
	idx := uint(0)
	if runtime.GOARCH == "s390x" {
		idx = 1
	}
	for _, f := range nsCloneFlags {
		p.Syscalls = append(p.Syscalls, specs.LinuxSyscall{
			Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: &eperm,
			Args: []specs.LinuxSeccompArg{{Index: idx, Value: f, ValueTwo: f, Op: specs.OpMaskedEqual}},
		})
	}
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// runcSeccomp asks runc (`runc features`, runc >= 1.1) whether it was
// built with seccomp, and which architectures it filters.
func runcSeccomp(runc string) (archs []string, err error) {
	out, err := exec.Command(runc, "features").Output()
	if err != nil {
		return nil, fmt.Errorf("`%s features` failed (%v): runc older than 1.1 cannot tell whether it supports seccomp", runc, err)
	}
	var f struct {
		Linux *struct {
			Seccomp *struct {
				Enabled *bool    `json:"enabled"`
				Archs   []string `json:"archs"`
			} `json:"seccomp"`
		} `json:"linux"`
	}
	if err := json.Unmarshal(out, &f); err != nil {
		return nil, fmt.Errorf("`%s features`: %w", runc, err)
	}
	if f.Linux == nil || f.Linux.Seccomp == nil || f.Linux.Seccomp.Enabled == nil || !*f.Linux.Seccomp.Enabled {
		return nil, errors.New("runc was built without seccomp")
	}
	return f.Linux.Seccomp.Archs, nil
}
