package main

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// The service manager's readiness protocol (sd_notify(3)), for a unit of
// Type=notify (contrib/systemd/computerfs@.service): the daemon sends
// READY=1 once its mount (or, for serve, its control socket) is live and
// STOPPING=1 when it starts to shut down, each as one datagram on the
// unix socket named by $NOTIFY_SOCKET. A few lines, so no library.

// notifySocketEnv names the service manager's socket.
const notifySocketEnv = "NOTIFY_SOCKET"

// notifier sends state to the service manager; its zero value (no
// $NOTIFY_SOCKET) sends nothing.
type notifier struct{ addr string }

// newNotifier takes $NOTIFY_SOCKET out of the environment, as
// sd_notify's unset_environment does, so that the backends this daemon
// starts do not speak for it.
func newNotifier() notifier {
	addr := os.Getenv(notifySocketEnv)
	os.Unsetenv(notifySocketEnv)
	return notifier{addr: addr}
}

// notify sends state, "KEY=VALUE" lines such as "READY=1". A path is a
// socket in the filesystem; a leading @ names one in the abstract
// namespace (Go's net package maps it to the leading NUL byte).
func (n notifier) notify(state string) error {
	if n.addr == "" {
		return nil
	}
	if !strings.HasPrefix(n.addr, "/") && !strings.HasPrefix(n.addr, "@") {
		return fmt.Errorf("%s=%q: want an absolute socket path or an @abstract name", notifySocketEnv, n.addr)
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify the service manager on %s: %w", n.addr, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify the service manager on %s: %w", n.addr, err)
	}
	return nil
}
