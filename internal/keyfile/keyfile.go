// Package keyfile keeps small secret keys in files: read when present,
// created atomically (mode 0600, directory 0700) when not, and never
// replaced once written — so two processes starting together agree on one
// key.
package keyfile

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cobranca/cobranca/internal/safefile"
)

// LoadOrCreate returns the contents of path, or writes make()'s bytes there
// first when the file does not exist. If another process creates the file
// meanwhile, its contents win. The file is read as Read reads it.
func LoadOrCreate(path string, make func() ([]byte, error)) ([]byte, error) {
	b, err := Read(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	data, err := make()
	if err != nil {
		return nil, err
	}
	if err := writeNew(path, data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Read(path)
		}
		return nil, err
	}
	return data, nil
}

// Read returns the contents of the key file at path, refusing — with an
// error naming the file and what is wrong — a symbolic link, anything but a
// regular file, a file owned by another user, or one its group or others
// may write: whoever can write a key file can plant the key the server then
// trusts (a signing key mints tokens).
func Read(path string) ([]byte, error) {
	f, err := safefile.Open(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	if err := safefile.CheckNotWritableByOthers(f); err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return b, nil
}

// writeNew creates path with data, failing with fs.ErrExist if it is there
// already. The file appears complete or not at all: written aside, synced,
// then hard-linked into place (a link, unlike a rename, never replaces).
func writeNew(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if err := errors.Join(tmp.Chmod(0o600), werr, tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}

// LoadOrCreateEd25519 returns the Ed25519 private key kept at path as a PEM
// PRIVATE KEY (PKCS #8), generating one when the file does not exist.
func LoadOrCreateEd25519(path string) (ed25519.PrivateKey, error) {
	data, err := LoadOrCreate(path, func() ([]byte, error) {
		_, key, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	})
	if err != nil {
		return nil, err
	}
	return ParseEd25519(path, data)
}

// ParseEd25519 reads a PEM PRIVATE KEY holding an Ed25519 key; path only
// names the file in errors.
func ParseEd25519(path string, data []byte) (ed25519.PrivateKey, error) {
	blk, _ := pem.Decode(data)
	if blk == nil || blk.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("%s: want a PEM PRIVATE KEY", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	key, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s: not an Ed25519 key", path)
	}
	return key, nil
}
