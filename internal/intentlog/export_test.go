package intentlog

import "os"

// SetFdatasync replaces the function that syncs l's file.
func SetFdatasync(l *Log, fn func(*os.File) error) { l.fdatasync = fn }

// RealFdatasync is the function a Log syncs its file with.
var RealFdatasync = fdatasync

// Fdatasyncs is the number of fdatasyncs l ran.
func Fdatasyncs(l *Log) int64 {
	l.smu.Lock()
	defer l.smu.Unlock()
	return l.nsync
}

// EncodeRecord is the encoding of a record, padding included.
func EncodeRecord(gen, lsn uint64, payload []byte) []byte {
	return appendRecord(nil, gen, lsn, payload)
}

const HeaderSize = headerSize
