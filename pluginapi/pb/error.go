package pb

import "syscall"

// This file is written by hand, not generated: the Go side of the Error
// message, shared by the plugin SDK (pluginapi) and the daemon's client
// (wsrpc), so that both read an error off the wire the same way.

// FSError is the cause of a file-system error that came over the wire:
// its errno, so that errors.Is(err, syscall.ENOENT) works, its code and
// its message.
type FSError struct {
	Errno   syscall.Errno
	Code    string // the errno's name ("ENOENT"), "CONFLICT" for a failed compare-and-swap, "PRUNED" for a change journal read past its end
	Message string
}

func (e *FSError) Error() string { return e.Message }

// Unwrap gives the errno.
func (e *FSError) Unwrap() error { return e.Errno }

// Cause returns the error e carries, or nil for none (a nil e). A zero
// errno reads as EIO, and an empty message as the errno's text.
func (e *Error) Cause() *FSError {
	if e == nil {
		return nil
	}
	c := &FSError{Errno: syscall.Errno(e.Errno), Code: e.Code, Message: e.Message}
	if c.Errno == 0 {
		c.Errno = syscall.EIO
	}
	if c.Message == "" {
		c.Message = c.Errno.Error()
	}
	return c
}
