package webhook_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/practice-api/practice-api/shared/webhook"
)

// tamper flips one bit in the middle of the sealed secret's ciphertext
// (its last part). Rewriting the last characters of the text instead
// changed nothing about one time in 256: base64's last character carries
// padding bits, and the text may already end as rewritten.
func tamper(t *testing.T, sealed string) string {
	t.Helper()
	i := strings.LastIndex(sealed, ":")
	ct, err := base64.RawURLEncoding.DecodeString(sealed[i+1:])
	if err != nil || len(ct) == 0 {
		t.Fatalf("sealed %q: its ciphertext is not base64url (%v)", sealed, err)
	}
	ct[len(ct)/2] ^= 1
	return sealed[:i+1] + base64.RawURLEncoding.EncodeToString(ct)
}

func roundTrip(t *testing.T, box webhook.SecretBox, fresh webhook.SecretBox, prefix string) {
	t.Helper()
	ctx := context.Background()
	bind := webhook.Binding("org-1", "ep-1")
	sealed, err := box.Seal(ctx, "whsec_abc", bind)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(sealed, prefix) || strings.Contains(sealed, "abc") {
		t.Fatalf("sealed %q", sealed)
	}
	again, _ := box.Seal(ctx, "whsec_abc", bind)
	if again == sealed {
		t.Fatal("two seals of one secret are equal: the nonce is not fresh")
	}
	for _, b := range []webhook.SecretBox{box, fresh} {
		if got, err := b.Open(ctx, sealed, bind); err != nil || got != "whsec_abc" {
			t.Fatalf("open: %q %v", got, err)
		}
	}
	// Bound to its endpoint: copied onto another endpoint's item, or
	// another organisation's, it does not open.
	for _, other := range []string{webhook.Binding("org-1", "ep-2"), webhook.Binding("org-2", "ep-1"), ""} {
		if got, err := box.Open(ctx, sealed, other); err == nil {
			t.Fatalf("a secret sealed for %s opened as %q for %q", bind, got, other)
		}
	}
	if _, err := box.Seal(ctx, "whsec_abc", ""); err == nil {
		t.Fatal("a secret sealed for no endpoint")
	}
	tampered := tamper(t, sealed)
	if _, err := box.Open(ctx, tampered, bind); err == nil {
		t.Fatal("a tampered secret opened")
	}
	if got, err := box.Open(ctx, "whsec_legacy", bind); err != nil || got != "whsec_legacy" {
		t.Fatalf("a secret stored before sealing: %q %v", got, err)
	}
	if _, err := box.Open(ctx, "garbage", bind); err == nil {
		t.Fatal("garbage opened")
	}
}

func TestLocalBox(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	roundTrip(t, webhook.LocalBox{Key: key}, webhook.LocalBox{Key: key}, "v2:local:")
}

// TestKMSBox seals under a KMS key on moto_server (preinstalled on this
// project's machines): envelope encryption with a generated data key,
// opened by a second box with a cold cache through Decrypt.
func TestKMSBox(t *testing.T) {
	if testing.Short() {
		t.Skip("starts moto_server (Python, seconds to listen): skipped with -short, as the queue adapter's moto tests are; make test runs it")
	}
	path, err := exec.LookPath("moto_server")
	if err != nil {
		t.Skip("moto_server is not installed here: the KMS envelope is not tested (CI's machine image has it)")
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(path, "-H", host, "-p", port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	// Python imports moto's services before it listens: seconds on a
	// quiet machine, over 15 s beside make test's other tiers at load 30.
	for deadline := time.Now().Add(90 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("moto_server ended before it listened on %s: %v", addr, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("moto_server did not listen within 90 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	client := kms.New(kms.Options{Region: "us-east-1", BaseEndpoint: aws.String(fmt.Sprintf("http://%s", addr)),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	key, err := client.CreateKey(context.Background(), &kms.CreateKeyInput{Description: aws.String("webhook secrets")})
	if err != nil {
		t.Fatal(err)
	}
	arn := *key.KeyMetadata.Arn
	roundTrip(t, &webhook.KMSBox{Client: client, KeyID: arn}, &webhook.KMSBox{Client: client, KeyID: arn}, "v3:kms:")
	// The data key is KMS's under the endpoint's encryption context (the
	// key policy requires one): KMS opens it under that context only, so
	// a cold box cannot open the secret as another endpoint's either.
	ctx := context.Background()
	sealed, err := (&webhook.KMSBox{Client: client, KeyID: arn}).Seal(ctx, "whsec_abc", webhook.Binding("org-1", "ep-1"))
	if err != nil {
		t.Fatal(err)
	}
	blob, err := base64.RawURLEncoding.DecodeString(strings.Split(sealed, ":")[2])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ec   map[string]string
		want bool
	}{
		{map[string]string{"org": "org-1", "endpoint": "ep-1"}, true},
		{map[string]string{"org": "org-1", "endpoint": "ep-2"}, false},
		{map[string]string{"org": "org-2", "endpoint": "ep-1"}, false},
		{nil, false},
	} {
		_, err := client.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, KeyId: aws.String(arn), EncryptionContext: c.ec})
		if (err == nil) != c.want {
			t.Errorf("the data key under context %v: %v, want opened %v", c.ec, err, c.want)
		}
	}
	if _, err := (&webhook.KMSBox{Client: client, KeyID: arn}).Open(ctx, sealed, webhook.Binding("org-1", "ep-2")); err == nil {
		t.Error("a cold box opened the secret as another endpoint's")
	}
}
