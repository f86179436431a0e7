package auditlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Checkpoint is a signed statement of the chain's head at a time: kept off the box, it lets
// Verify expose a chain that was rebuilt (recomputed from a changed event onwards) later.
type Checkpoint struct {
	Seq  int64
	Hash []byte
	Time time.Time
}

// checkpointFile is the checkpoint as written: JSON, with the signer's public key for
// reference and an Ed25519 signature over signedBytes.
type checkpointFile struct {
	Version   int       `json:"version"`
	Seq       int64     `json:"seq"`
	Hash      string    `json:"hash"`
	Time      time.Time `json:"time"`
	PublicKey []byte    `json:"publicKey"`
	Signature []byte    `json:"signature"`
}

// signedBytes is what the signature covers: a domain tag and the fields, one per line.
func (c Checkpoint) signedBytes() []byte {
	return []byte("cobranca audit checkpoint v1\n" +
		"seq " + strconv.FormatInt(c.Seq, 10) + "\n" +
		"hash " + hex.EncodeToString(c.Hash) + "\n" +
		"time " + c.Time.UTC().Format(time.RFC3339Nano) + "\n")
}

// Checkpoint seals what can be sealed, verifies the chain, and returns its head, signed with
// key, as the JSON document to keep. A chain that does not verify gets no checkpoint.
func (l *Log) Checkpoint(ctx context.Context, key ed25519.PrivateKey) ([]byte, Checkpoint, error) {
	rep, err := l.Verify(ctx)
	if err != nil {
		return nil, Checkpoint{}, err
	}
	if rep.Problem != nil {
		return nil, Checkpoint{}, fmt.Errorf("no checkpoint of a broken chain: %w", rep.Problem)
	}
	if !rep.MACsChecked {
		return nil, Checkpoint{}, errors.New("no checkpoint without the audit key: the events' MACs must verify first")
	}
	c := Checkpoint{Seq: rep.Head.Seq, Hash: rep.Head.Hash, Time: l.now().UTC().Truncate(time.Microsecond)}
	doc, err := c.Sign(key)
	return doc, c, err
}

// Sign returns the checkpoint as a signed JSON document.
func (c Checkpoint) Sign(key ed25519.PrivateKey) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, errors.New("checkpoint: invalid signing key")
	}
	f := checkpointFile{
		Version:   1,
		Seq:       c.Seq,
		Hash:      hex.EncodeToString(c.Hash),
		Time:      c.Time.UTC(),
		PublicKey: key.Public().(ed25519.PublicKey),
		Signature: ed25519.Sign(key, c.signedBytes()),
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseCheckpoint reads a checkpoint document and checks its signature with pub: a checkpoint
// signed by any other key is refused, whatever key it names.
func ParseCheckpoint(doc []byte, pub ed25519.PublicKey) (Checkpoint, error) {
	var f checkpointFile
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	if f.Version != 1 {
		return Checkpoint{}, fmt.Errorf("checkpoint: unknown version %d", f.Version)
	}
	h, err := hex.DecodeString(f.Hash)
	if err != nil || len(h) != 32 {
		return Checkpoint{}, errors.New("checkpoint: hash is not 32 bytes of hex")
	}
	if f.Seq < 0 {
		return Checkpoint{}, errors.New("checkpoint: negative seq")
	}
	c := Checkpoint{Seq: f.Seq, Hash: h, Time: f.Time}
	if !ed25519.Verify(pub, c.signedBytes(), f.Signature) {
		return Checkpoint{}, errors.New("checkpoint: signature does not verify with the configured key")
	}
	return c, nil
}
