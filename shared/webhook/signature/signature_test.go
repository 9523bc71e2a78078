package signature

import (
	"strings"
	"testing"
	"time"
)

func TestSignAndVerify(t *testing.T) {
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
