package cpr_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/cpr"
)

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		// Every spelling the attack report tried, and more.
		{"010190-1234", true},
		{"0101901234", true},
		{"010190 1234", true},
		{"01.01.90-1234", true},
		{"010190/1234", true},
		{"010190–1234", true}, // en dash
		{"010190—1234", true}, // em dash
		{"010190‑1234", true}, // non-breaking hyphen
		{"010190−1234", true}, // minus sign
		{"０１０１９０－１２３４", true}, // full width
		{"01 01 90 1234", true},
		{"010190 12 34", true},
		{"010190\u200b1234", true},  // zero-width space
		{"0101\u00ad90-1234", true}, // soft hyphen
		{"010190\u00a01234", true},  // no-break space
		{"٠١٠١٩٠-١٢٣٤", true},       // Arabic-Indic digits
		{"०१०१९०-१२३४", true},       // Devanagari digits
		{"𝟎𝟏𝟎𝟏𝟗𝟎-𝟏𝟐𝟑𝟒", true},       // mathematical bold digits
		{"010190 - 1234", true},
		{"Ring på 010190-1234 i morgen", true},
		{"SAG-010190-1234", true},
		{"sag 2024 010190-1234", true},
		{"https://hooks.example.dk/in/010190-1234", true},
		{"https://hooks.example.dk/in/010190%2D1234", true},
		{"311299-9999", true},
		// False positives that must pass.
		{"123456789012", false},              // a 12-digit invoice number
		{"+45 12 34 56 78", false},           // a phone number
		{"anne12345678@example.dk", false},   // an e-mail with 8 digits
		{"Møde 15.03.2024 kl. 10.30", false}, // a date and a time
		{"Møde 15.03.2024 10.30-12.00", false},
		{"2025-03-14", false},
		{"2026-11-22T18:43:01.000000Z", false},
		{"SAG-1234", false},
		{"12345678", false},
		{"DK 12 34 56 78", false},
		{"320190-1234", false}, // day 32
		{"011390-1234", false}, // month 13
		{"0101 901234", false}, // split only inside the date
		{"01019012345", false}, // eleven digits
		{"5eed0000-0000-4000-8000-000000000001", false},
		{"c0ffee01-0190-4234-8abc-def012345678", false}, // a UUID that reads as 01-0190-4234
		{"b6f5e0a1e33c41d2a0101901234abcdef0a1b2c3d4e5f60718293a4b5c6d7e8", false}, // a hex secret
		{"abc 010190-1234", true},
		{"x0101901234", true},
		{"", false},
	} {
		if got := cpr.Find(tc.in); got != tc.want {
			t.Errorf("Find(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestNoUUIDReadsAsACPR draws a million random UUIDs: ids are sent in
// bodies and returned everywhere, so none may be taken for a CPR.
func TestNoUUIDReadsAsACPR(t *testing.T) {
	for range 1_000_000 {
		if id := uuid.NewString(); cpr.Find(id) || cpr.Find("client "+id+".") {
			t.Fatalf("UUID %s reads as a CPR", id)
		}
	}
}

func TestIsKey(t *testing.T) {
	for _, k := range []string{"cpr", "CPR", "cpr_number", "cprNr", "c.p.r.", "CPR-nummer", "personnummer", "person_nr", "ｃｐｒ"} {
		if !cpr.IsKey(k) {
			t.Errorf("IsKey(%q) = false", k)
		}
	}
	for _, k := range []string{"name", "email", "cvr", "description", "corporate"} {
		if cpr.IsKey(k) {
			t.Errorf("IsKey(%q) = true", k)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, in := range []string{"unknown status 010190-1234", "a ０１０１９０－１２３４ b", "x 01 01 90 1234 y 020290-1234", "%30%31%30%31%39%30%31%32%33%34"} {
		out := cpr.Redact(in)
		if cpr.Find(out) || !strings.Contains(out, cpr.Marker) {
			t.Errorf("Redact(%q) = %q", in, out)
		}
	}
	if got := cpr.Redact("Møde 15.03.2024 kl. 10.30"); got != "Møde 15.03.2024 kl. 10.30" {
		t.Errorf("Redact changed clean text: %q", got)
	}
	if got := cpr.Redact("a 010190-1234 b"); got != "a "+cpr.Marker+" b" {
		t.Errorf("Redact kept too little: %q", got)
	}
}

func TestScrub(t *testing.T) {
	var in any
	_ = json.Unmarshal([]byte(`{"name":"Nordlys ApS","owner":{"cpr":"010190-1234","name":"Anne","ids":["x","0101901234"]},
		"CPR-nr":"x","010190-1234":"key","employees":12}`), &in)
	out, removed := cpr.Scrub(in)
	raw, _ := json.Marshal(out)
	if cpr.Find(string(raw)) || strings.Contains(strings.ToLower(string(raw)), "cpr\"") || removed != 4 {
		t.Fatalf("scrubbed %d: %s", removed, raw)
	}
	if !strings.Contains(string(raw), `"name":"Nordlys ApS"`) || !strings.Contains(string(raw), cpr.Marker) {
		t.Fatalf("scrub removed too much: %s", raw)
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"010190-1234", "０１０１９０－１２３４", "a\u200b0", "\xff010190-1234"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if cpr.Find(cpr.Redact(s)) {
			t.Fatalf("Redact(%q) still holds a CPR", s)
		}
	})
}
