package apikey

import (
	"strings"
	"testing"
)

func TestTokenRoundTripAndParsing(t *testing.T) {
	t.Parallel()
	tok, err := New(ModeLive, "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10")
	if err != nil {
		t.Fatal(err)
	}
	s := tok.String()
	if !strings.HasPrefix(s, "pa_live_0b0f6e3c4a514d1c9d3e2f1a8c6b7e10_") {
		t.Fatalf("token %q", s)
	}
	back, err := Parse(s)
	if err != nil || back != tok || back.Hash() != tok.Hash() {
		t.Fatalf("parse: %v %v", back, err)
	}
	if strings.Contains(tok.Hash(), tok.secret) {
		t.Fatal("hash contains the secret")
	}
	bad := []string{
		"", "pa_", s[:len(s)-1], s + "0", strings.Replace(s, "pa_live_", "pa_prod_", 1),
		strings.Replace(s, "pa_live_", "sk_live_", 1), strings.ToUpper(s), strings.Replace(s, "_", "-", -1),
		"pa_live_" + strings.Repeat("g", 32) + s[len("pa_live_")+32:],
	}
	for _, b := range bad {
		if _, err := Parse(b); err == nil {
			t.Errorf("accepted %q", b)
		}
	}
}

func FuzzParseToken(f *testing.F) {
	f.Add("pa_test_0b0f6e3c4a514d1c9d3e2f1a8c6b7e10_0011223344556677_" + strings.Repeat("ab", 32))
	f.Fuzz(func(t *testing.T, s string) {
		if tok, err := Parse(s); err == nil && tok.String() != s {
			t.Fatalf("%q parses to %q", s, tok.String())
		}
	})
}
