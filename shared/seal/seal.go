// Package seal encrypts small secrets that the service must read back (TOTP secrets, which
// unlike codes and tokens cannot be stored as hashes), so that a copy of the table alone does
// not reveal them. Two adapters sit behind one interface, so no caller knows where the key is:
// AESGCM, keyed from configuration (the data folder's key file for `go run .`), and KMS, which
// keeps the key inside AWS KMS. Configuration picks one.
//
// Every sealed value is bound to a context string (for a TOTP secret, the user it belongs
// to): AES-GCM takes it as additional authenticated data and KMS as its encryption context, so
// a sealed value copied onto another user's item does not open there.
//
// A sealed value starts with one byte naming the adapter that made it, so that opening it
// with the other adapter fails with ErrWrongAdapter rather than with an unexplained
// authentication failure.
package seal

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
)

// Sealer encrypts and decrypts small secrets bound to a context string.
type Sealer interface {
	// Seal encrypts plaintext for context; the result is safe to store.
	Seal(ctx context.Context, plaintext []byte, context string) ([]byte, error)
	// Open decrypts what Seal returned for the same context.
	Open(ctx context.Context, sealed []byte, context string) ([]byte, error)
}

// Errors of the package. Check them with errors.Is.
var (
	// ErrKeySize is returned by NewAESGCM for a key that is not KeySize bytes.
	ErrKeySize = errors.New("seal: AES-GCM key must be 32 bytes")
	// ErrOpen is returned by Open when the value was not sealed with this key and context, or
	// was altered.
	ErrOpen = errors.New("seal: cannot open the sealed value")
	// ErrWrongAdapter is returned by Open for a value sealed by the other adapter: the
	// configuration changed between sealing and opening.
	ErrWrongAdapter = errors.New("seal: value was sealed by another adapter")
)

// KeySize is the size of an AESGCM key: AES-256.
const KeySize = 32

// Tags of the first byte of a sealed value.
const (
	tagAESGCM byte = 1
	tagKMS    byte = 2
)

// AESGCM seals with AES-256-GCM under a key from configuration, with a random 96-bit nonce
// per value (NIST SP 800-38D: safe for far more values than a table of users will hold).
type AESGCM struct {
	aead cipher.AEAD
}

var _ Sealer = (*AESGCM)(nil)

// NewAESGCM returns an AES-GCM sealer; key must be KeySize random bytes.
func NewAESGCM(key []byte) (*AESGCM, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("%w, got %d", ErrKeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &AESGCM{aead: aead}, nil
}

// Seal returns tag | nonce | ciphertext and GCM tag.
func (s *AESGCM) Seal(_ context.Context, plaintext []byte, context string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: nonce: %w", err)
	}
	out := append([]byte{tagAESGCM}, nonce...)
	return s.aead.Seal(out, nonce, plaintext, []byte(context)), nil
}

// Open reverses Seal.
func (s *AESGCM) Open(_ context.Context, sealed []byte, context string) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, ErrOpen
	}
	if sealed[0] != tagAESGCM {
		return nil, ErrWrongAdapter
	}
	body := sealed[1:]
	if len(body) < s.aead.NonceSize()+s.aead.Overhead() {
		return nil, ErrOpen
	}
	nonce, ct := body[:s.aead.NonceSize()], body[s.aead.NonceSize():]
	pt, err := s.aead.Open(nil, nonce, ct, []byte(context))
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}

// KMSClient is the part of the KMS client the KMS sealer uses; *kms.Client is one.
type KMSClient interface {
	Encrypt(ctx context.Context, in *kms.EncryptInput, optFns ...func(*kms.Options)) (*kms.EncryptOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

var _ KMSClient = (*kms.Client)(nil)

// ContextKey is the name under which the context string goes into KMS's encryption context
// (which is logged in CloudTrail: the context string must never be a secret).
const ContextKey = "roadevents:context"

// KMS seals with a symmetric KMS key: the key never leaves KMS, each Seal and Open is one
// call. TOTP secrets are read at sign-in and at key issuance only, so the calls are few.
type KMS struct {
	client KMSClient
	keyID  string
}

var _ Sealer = (*KMS)(nil)

// NewKMS returns a KMS sealer using the key keyID (an id, ARN or alias).
func NewKMS(client KMSClient, keyID string) *KMS {
	return &KMS{client: client, keyID: keyID}
}

// Seal encrypts plaintext with KMS Encrypt under the configured key.
func (s *KMS) Seal(ctx context.Context, plaintext []byte, context string) ([]byte, error) {
	out, err := s.client.Encrypt(ctx, &kms.EncryptInput{
		KeyId:             aws.String(s.keyID),
		Plaintext:         plaintext,
		EncryptionContext: map[string]string{ContextKey: context},
	})
	if err != nil {
		return nil, fmt.Errorf("seal: KMS encrypt: %w", err)
	}
	return append([]byte{tagKMS}, out.CiphertextBlob...), nil
}

// Open decrypts with KMS Decrypt, naming the key so that a blob of another key is refused.
func (s *KMS) Open(ctx context.Context, sealed []byte, context string) ([]byte, error) {
	if len(sealed) < 2 {
		return nil, ErrOpen
	}
	if sealed[0] != tagKMS {
		return nil, ErrWrongAdapter
	}
	out, err := s.client.Decrypt(ctx, &kms.DecryptInput{
		CiphertextBlob:    sealed[1:],
		KeyId:             aws.String(s.keyID),
		EncryptionContext: map[string]string{ContextKey: context},
	})
	var invalid *types.InvalidCiphertextException
	switch {
	case errors.As(err, &invalid):
		// Altered, of another key, or sealed for another context.
		return nil, fmt.Errorf("%w: KMS: %w", ErrOpen, err)
	case err != nil:
		return nil, fmt.Errorf("seal: KMS decrypt: %w", err)
	}
	return out.Plaintext, nil
}
