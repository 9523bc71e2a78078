package signature

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

func TestSignAndVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"e1","event":"matter.created"}`)
	h := Sign("whsec_x", now, body)
	if !strings.HasPrefix(h, "t=1700000000,v1=") || len(h) != len("t=1700000000,v1=")+64 {
		t.Fatalf("header %q", h)
	}
	cases := []struct {
		name   string
		secret string
		header string
		body   []byte
		at     time.Time
		want   error
	}{
		{"valid", "whsec_x", h, body, now, nil},
		{"within tolerance", "whsec_x", h, body, now.Add(299 * time.Second), nil},
		{"too old", "whsec_x", h, body, now.Add(301 * time.Second), ErrTimestamp},
		{"from the future", "whsec_x", h, body, now.Add(-301 * time.Second), ErrTimestamp},
		{"other secret", "whsec_y", h, body, now, ErrMismatch},
		{"body re-serialised", "whsec_x", h, []byte(`{"event":"matter.created","id":"e1"}`), now, ErrMismatch},
		{"rotation: second v1 matches", "whsec_x", "t=1700000000,v1=" + strings.Repeat("0", 64) + "," + h[len("t=1700000000,"):], body, now, nil},
		{"no v1", "whsec_x", "t=1700000000", body, now, ErrMalformed},
		{"garbage", "whsec_x", "nonsense", body, now, ErrMalformed},
	}
	for _, c := range cases {
		if err := Verify(c.secret, c.header, c.body, c.at, DefaultTolerance); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestRotationSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"e1"}`)
	h := SignAll([]string{"whsec_new", "whsec_old"}, now, body)
	if strings.Count(h, ",v1=") != 2 {
		t.Fatalf("header %q: want two v1 signatures", h)
	}
	for _, secret := range []string{"whsec_new", "whsec_old"} {
		if err := Verify(secret, h, body, now, DefaultTolerance); err != nil {
			t.Errorf("a receiver holding %s: %v", secret, err)
		}
	}
	if err := Verify("whsec_other", h, body, now, DefaultTolerance); err != ErrMismatch {
		t.Errorf("another secret: %v", err)
	}
	if err := VerifyAny([]string{"whsec_other", "whsec_old"}, Sign("whsec_old", now, body), body, now, DefaultTolerance); err != nil {
		t.Errorf("VerifyAny with the old secret among several: %v", err)
	}
	if err := VerifyAny([]string{"whsec_a", "whsec_b"}, h, body, now, DefaultTolerance); err != ErrMismatch {
		t.Errorf("VerifyAny with neither: %v", err)
	}
	if err := VerifyAny([]string{"whsec_new"}, h, body, now.Add(time.Hour), DefaultTolerance); err != ErrTimestamp {
		t.Errorf("VerifyAny late: %v", err)
	}
}

// TestStandardSignVerifiesWithTheLibrary: webhook-signature as the
// Standard Webhooks Go library computes and checks it, for a secret of
// the current form (whsec_ and base64), of the form before it (whsec_ and
// 64 hex digits: base64 characters, a 48-byte key), and both at once (a
// rotation); a secret that is not base64 signs nothing.
func TestStandardSignVerifiesWithTheLibrary(t *testing.T) {
	t.Parallel()
	now := time.Now()
	body := []byte(`{"id":"e1","event":"matter.created","sequence":1}`)
	current := "whsec_" + base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	legacy := "whsec_" + strings.Repeat("3b9f1c2d", 8)
	for _, secrets := range [][]string{{current}, {legacy}, {current, legacy}} {
		h := http.Header{}
		h.Set(HeaderWebhookID, "msg_1")
		h.Set(HeaderWebhookTimestamp, strconv.FormatInt(now.Unix(), 10))
		h.Set(HeaderWebhookSignature, StandardSign(secrets, "msg_1", now, body))
		if n := len(strings.Fields(h.Get(HeaderWebhookSignature))); n != len(secrets) {
			t.Fatalf("%d signatures for %d secrets", n, len(secrets))
		}
		for _, s := range secrets {
			wh, err := standardwebhooks.NewWebhook(s)
			if err != nil {
				t.Fatalf("the library refuses %s: %v", s, err)
			}
			if err := wh.Verify(body, h); err != nil {
				t.Fatalf("%v: the library does not verify with %s: %v", secrets, s, err)
			}
			if want, _ := wh.Sign("msg_1", now, body); !strings.Contains(h.Get(HeaderWebhookSignature), want) {
				t.Fatalf("the library signs %s, we sent %s", want, h.Get(HeaderWebhookSignature))
			}
		}
		if err := func() error {
			wh, _ := standardwebhooks.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("another key")))
			return wh.Verify(body, h)
		}(); err == nil {
			t.Fatal("another secret verified")
		}
	}
	if got := StandardSign([]string{"whsec_not base64!"}, "msg_1", now, body); got != "" {
		t.Fatalf("a secret that is not base64 signed: %q", got)
	}
}
