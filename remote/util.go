package remote

import (
	"bytes"
	"io"
)

func bytesReader(b []byte) io.ReadSeeker { return bytes.NewReader(b) }
