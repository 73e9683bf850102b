package seal_test

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/roadevents/roadevents/shared/seal"
)

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, seal.KeySize)
	rand.Read(k)
	return k
}

// fakeKMS behaves as KMS does for a symmetric key: the blob names the key, the encryption
// context must match exactly at Decrypt, and a mismatch is InvalidCiphertextException.
type fakeKMS struct {
	keyID string
	aead  cipher.AEAD
	calls []string
	fail  error
}

func newFakeKMS(t *testing.T, keyID string) *fakeKMS {
	block, err := aes.NewCipher(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	aead, _ := cipher.NewGCM(block)
	return &fakeKMS{keyID: keyID, aead: aead}
}

func encodeContext(m map[string]string) []byte {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return []byte(strings.Join(parts, "&"))
}

func (f *fakeKMS) Encrypt(_ context.Context, in *kms.EncryptInput, _ ...func(*kms.Options)) (*kms.EncryptOutput, error) {
	f.calls = append(f.calls, "Encrypt "+aws.ToString(in.KeyId))
	if f.fail != nil {
		return nil, f.fail
	}
	if aws.ToString(in.KeyId) != f.keyID {
		return nil, &types.NotFoundException{Message: aws.String("no such key")}
	}
	nonce := make([]byte, f.aead.NonceSize())
	rand.Read(nonce)
	blob := append([]byte(f.keyID+"|"), nonce...)
	return &kms.EncryptOutput{CiphertextBlob: f.aead.Seal(blob, nonce, in.Plaintext, encodeContext(in.EncryptionContext)), KeyId: in.KeyId}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	f.calls = append(f.calls, "Decrypt "+aws.ToString(in.KeyId))
	if f.fail != nil {
		return nil, f.fail
	}
	invalid := &types.InvalidCiphertextException{Message: aws.String("invalid")}
	keyID, rest, ok := bytes.Cut(in.CiphertextBlob, []byte("|"))
	if !ok || string(keyID) != f.keyID || (in.KeyId != nil && *in.KeyId != f.keyID) || len(rest) < f.aead.NonceSize() {
		return nil, invalid
	}
	pt, err := f.aead.Open(nil, rest[:f.aead.NonceSize()], rest[f.aead.NonceSize():], encodeContext(in.EncryptionContext))
	if err != nil {
		return nil, invalid
	}
	return &kms.DecryptOutput{Plaintext: pt, KeyId: aws.String(f.keyID)}, nil
}

// Both adapters keep the same promises: the sealed value does not hold the secret, it opens
// for its own context only, and tampering is detected.
func TestSealers(t *testing.T) {
	t.Parallel()
	aesSealer, err := seal.NewAESGCM(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := seal.NewAESGCM(newKey(t))
	sealers := []struct {
		name  string
		s     seal.Sealer
		other seal.Sealer // same adapter, another key
	}{
		{"AESGCM", aesSealer, otherKey},
		{"KMS", seal.NewKMS(newFakeKMS(t, "alias/totp"), "alias/totp"), seal.NewKMS(newFakeKMS(t, "alias/other"), "alias/other")},
	}
	for _, tc := range sealers {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			secret := []byte("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP")
			sealed, err := tc.s.Seal(ctx, secret, "user:usr_1")
			if err != nil {
				t.Fatalf("Seal = %v", err)
			}
			if bytes.Contains(sealed, secret) {
				t.Errorf("sealed value %q holds the secret in clear", sealed)
			}
			again, _ := tc.s.Seal(ctx, secret, "user:usr_1")
			if bytes.Equal(again, sealed) {
				t.Errorf("two seals of one secret are equal; want a fresh nonce each time")
			}
			got, err := tc.s.Open(ctx, sealed, "user:usr_1")
			if err != nil || !bytes.Equal(got, secret) {
				t.Fatalf("Open = %q, %v; want %q", got, err, secret)
			}
			if _, err := tc.s.Open(ctx, sealed, "user:usr_2"); !errors.Is(err, seal.ErrOpen) {
				t.Errorf("Open for another context = %v; want ErrOpen", err)
			}
			if _, err := tc.other.Open(ctx, sealed, "user:usr_1"); !errors.Is(err, seal.ErrOpen) {
				t.Errorf("Open with another key = %v; want ErrOpen", err)
			}
			tampered := bytes.Clone(sealed)
			tampered[len(tampered)-1] ^= 1
			if _, err := tc.s.Open(ctx, tampered, "user:usr_1"); !errors.Is(err, seal.ErrOpen) {
				t.Errorf("Open of a tampered value = %v; want ErrOpen", err)
			}
			for _, short := range [][]byte{nil, sealed[:1]} {
				if _, err := tc.s.Open(ctx, short, "user:usr_1"); !errors.Is(err, seal.ErrOpen) {
					t.Errorf("Open(%x) = %v; want ErrOpen", short, err)
				}
			}
		})
	}
}

// A value sealed by one adapter is refused by the other with ErrWrongAdapter, which tells an
// operator the configuration changed, instead of a bare authentication failure.
func TestWrongAdapter(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, _ := seal.NewAESGCM(newKey(t))
	k := seal.NewKMS(newFakeKMS(t, "k"), "k")
	byAES, _ := a.Seal(ctx, []byte("s"), "c")
	byKMS, _ := k.Seal(ctx, []byte("s"), "c")
	if _, err := k.Open(ctx, byAES, "c"); !errors.Is(err, seal.ErrWrongAdapter) {
		t.Errorf("KMS.Open(AES value) = %v; want ErrWrongAdapter", err)
	}
	if _, err := a.Open(ctx, byKMS, "c"); !errors.Is(err, seal.ErrWrongAdapter) {
		t.Errorf("AESGCM.Open(KMS value) = %v; want ErrWrongAdapter", err)
	}
}

// The KMS adapter names its key on both calls and passes the context as KMS's encryption
// context; a failure of KMS itself is an error of the service, not ErrOpen.
func TestKMSCalls(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	f := newFakeKMS(t, "arn:aws:kms:eu-west-1:1:key/k")
	s := seal.NewKMS(f, "arn:aws:kms:eu-west-1:1:key/k")
	sealed, err := s.Seal(ctx, []byte("secret"), "user:u")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, sealed, "user:u"); err != nil {
		t.Fatal(err)
	}
	want := []string{"Encrypt arn:aws:kms:eu-west-1:1:key/k", "Decrypt arn:aws:kms:eu-west-1:1:key/k"}
	if fmt.Sprint(f.calls) != fmt.Sprint(want) {
		t.Errorf("KMS calls = %q; want %q", f.calls, want)
	}
	f.fail = errors.New("throttled")
	if _, err := s.Open(ctx, sealed, "user:u"); err == nil || errors.Is(err, seal.ErrOpen) {
		t.Errorf("Open while KMS fails = %v; want an error that is not ErrOpen", err)
	}
	if _, err := s.Seal(ctx, []byte("x"), "user:u"); err == nil {
		t.Errorf("Seal while KMS fails = nil; want an error")
	}
}

func TestNewAESGCMKeySize(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 16, 31, 33} {
		if _, err := seal.NewAESGCM(make([]byte, n)); !errors.Is(err, seal.ErrKeySize) {
			t.Errorf("NewAESGCM(%d bytes) = %v; want ErrKeySize", n, err)
		}
	}
}
