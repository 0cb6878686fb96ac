package remote

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/computerfs/computerfs/chunkstore"
)

// Client-side encryption (FORMAT.md, "Encryption"): with a key, chunk
// objects are named by keyed content IDs (HMAC-SHA256 of the chunk ID),
// so that deduplication holds among everything pushed with the same key
// and the names say nothing of the contents to anyone without it, and
// every chunk, manifest and ref is sealed with AES-256-GCM. The key
// never leaves the client.

// KeySize is the size of a remote key.
const KeySize = 32

// encMagic starts every sealed object.
const encMagic = "CFSE1"

// ErrEncrypted is the cause of reading an encrypted remote without its
// key (or with another key).
var ErrEncrypted = errors.New("encrypted remote: wrong or missing key")

type crypter struct {
	idKey []byte
	aead  cipher.AEAD
}

func subkey(master []byte, label string) []byte {
	m := hmac.New(sha256.New, master)
	m.Write([]byte(label))
	return m.Sum(nil)
}

func newCrypter(master []byte) (*crypter, error) {
	if len(master) != KeySize {
		return nil, fmt.Errorf("remote key: %d bytes, want %d", len(master), KeySize)
	}
	block, err := aes.NewCipher(subkey(master, "computerfs remote aead v1"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &crypter{idKey: subkey(master, "computerfs remote chunk id v1"), aead: aead}, nil
}

// objectID is a chunk's keyed content ID, in hex.
func (c *crypter) objectID(id chunkstore.ID) string {
	m := hmac.New(sha256.New, c.idKey)
	m.Write(id[:])
	return hex.EncodeToString(m.Sum(nil))
}

// seal is encMagic ‖ nonce ‖ AES-GCM(plain) with aad bound in: an object
// moved to another role or name does not open.
func (c *crypter) seal(aad string, plain []byte) []byte {
	out := make([]byte, len(encMagic)+c.aead.NonceSize(), len(encMagic)+c.aead.NonceSize()+len(plain)+c.aead.Overhead())
	copy(out, encMagic)
	if _, err := rand.Read(out[len(encMagic):]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return c.aead.Seal(out, out[len(encMagic):], plain, []byte(aad))
}

func (c *crypter) open(aad string, b []byte) ([]byte, error) {
	ns := c.aead.NonceSize()
	if !bytes.HasPrefix(b, []byte(encMagic)) || len(b) < len(encMagic)+ns+c.aead.Overhead() {
		return nil, fmt.Errorf("%s: %w: not an encrypted object", aad, ErrFormat)
	}
	p, err := c.aead.Open(nil, b[len(encMagic):len(encMagic)+ns], b[len(encMagic)+ns:], []byte(aad))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w (or the object was altered)", aad, ErrFormat, ErrEncrypted)
	}
	return p, nil
}

// overhead is what sealing adds to an object.
const sealOverhead = len(encMagic) + 12 + 16

// isSealed says whether an object looks encrypted.
func isSealed(b []byte) bool { return bytes.HasPrefix(b, []byte(encMagic)) }

// NewKey writes a new random key to path (hex, mode 0600); an existing
// file is refused.
func NewKey(path string) error {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("new key: %w", err)
	}
	if _, err := f.WriteString(hex.EncodeToString(k) + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("new key: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("new key: %w", err)
	}
	return f.Close()
}

// ReadKey reads a key file: 64 hex digits.
func ReadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("remote key: %w", err)
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(k) != KeySize {
		return nil, fmt.Errorf("remote key %s: want %d hex digits", path, 2*KeySize)
	}
	return k, nil
}
