// Package tailbuf keeps the end of a stream: the last bytes a command
// wrote to stderr, for an error message that shows why it failed without
// holding all it printed. It owns nothing else.
package tailbuf

// Buffer keeps the last Max bytes written to it. It is not safe for
// concurrent use: read it once its writer is done.
type Buffer struct {
	Max int
	b   []byte
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{Max: max} }

func (t *Buffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.Max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.Max:]...)
	}
	return len(p), nil
}

// Bytes returns what is kept; it is valid until the next Write.
func (t *Buffer) Bytes() []byte { return t.b }

func (t *Buffer) String() string { return string(t.b) }
