package cpr_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/cpr"
)

// mustRefuse are spellings of a CPR: each must be found.
var mustRefuse = []string{
	// The plain forms.
	"010190-1234", "0101901234", "010190 1234", "01.01.90-1234", "010190/1234", "311299-9999", "290296-1234",
	"010190–1234", "010190—1234", "010190‑1234", "010190−1234", "０１０１９０－１２３４", "01 01 90 1234", "010190 12 34",
	"010190 - 1234", "Ring på 010190-1234 i morgen", "SAG-010190-1234", "sag 2024 010190-1234", "abc 010190-1234",
	"x0101901234", "0101 901234", "01019 01234",
	// Invisible code points between the digits.
	"010190\u200b1234", "0101\u00ad90-1234", "010190\u00a01234",
	"0101\u034f901234",        // combining grapheme joiner
	"010190\ufe0f1234",        // variation selector 16
	"0101\u3164901234",        // Hangul filler (a "letter")
	"010190\uffa01234",        // halfwidth Hangul filler
	"010190\u115f1234",        // Hangul choseong filler
	"0101\u2800901234",        // braille blank
	"0\u03011\u03010190-1234", // combining acute accents on the digits
	"0̃1̃0̃1̃9̃0̃1̃2̃3̃4̃",
	// Separators outside any short list, and long gaps.
	"010190_1234", "010190,1234", "010190:1234", "010190+1234", "010190·1234", "010190⁃1234",
	"010190    1234", "010190 -- 1234", "01_01_90_12_34", "01.01.90 ~~~ 12.34", "0\t1\n0\r1 9 0 1 2 3 4",
	// Other scripts' digits, compatibility forms and lookalikes.
	"٠١٠١٩٠-١٢٣٤", "०१०१९०-१२३४", "𝟎𝟏𝟎𝟏𝟗𝟎-𝟏𝟐𝟑𝟒", "⓿❶⓿❶➈⓿-❶❷❸❹", "⓪①⓪①⑨⓪-①②③④", "⁰¹⁰¹⁹⁰-¹²³⁴",
	"⓿➀⓿➀⓽⓿➀➁➂➃", "🄌➊🄌➊➒🄌➊➋➌➍", "0⓵0⓵90-⓵⓶⓷⓸",
	// Encodings: entities, percent-encoding, doubled, with a malformed escape beside.
	"&#48;10190-1234", "&#x30;&#x31;0190-1234", "%30%31%30%31%39%30%31%32%33%34", "%2530%2531%2530%2531%2539%2530-1234",
	"010190%2D1234", "%zz 010190%2D1234", "100% sure: 010190%2D1234", "&amp;#48;10190-1234", "%26%2348%3B10190-1234",
	"https://hooks.example.dk/in/010190-1234", "https://hooks.example.dk/in/010190%2D1234",
	"https://hooks.example.dk/in?c=010190+1234", "https://hooks.example.dk/010190_1234",
	"0101%901234", // an escape that eats two digits when decoded: the layer as sent still shows them
	// Ten digits inside a stretch of dates and times that holds only ten
	// (a date and one time of day with only a dash between them included).
	"01.01 9.01 2.34", "01.01.90-12.34",
	// Round 4's probe: a CPR followed by hex, shaped as a UUID, with the
	// century (DDMMYYYY-SSSS), with a letter for a dash.
	"0101901234abcdefabcdefabcdefabcdef", "0101901234abcdefabcdefabcdef", "x 0101901234abcdefabcdefabcdefabcdef",
	"01019012-3400-4000-8000-000000000000", "01.01.1990-1234", "01011990-1234", "01.01.1990 1234",
	"010190ー1234", "010190ｰ1234", "010190一1234", "010190ㅡ1234",
}

// mustAccept are texts with digits that are not CPRs.
var mustAccept = []string{
	"123456789012", "01019012345", "+45 12 34 56 78", "+45 20 11 90 12", "(+45) 31 12 88 00", "0045 20119012",
	"anne12345678@example.dk", "DK 12 34 56 78", "12345678", "SAG-1234", "2025-03-14", "2026-11-22T18:43:01.000000Z",
	"Møde 15.03.2024 kl. 10.30", "Møde 15.03.2024 10.30-12.00", "Møde 15.03.24 10.30-11.15", "15.03.24 10.30 - 11.15",
	"kl. 10.30-11.15, 12.00-13.45", "perioden 01.01.24-31.12.24", "01.01.2024 - 31.12.2024", "01.01.1990 12.34",
	"320190-1234", "011390-1234", "300290-1234", "290297-1234", "000190-1234",
	"5eed0000-0000-4000-8000-000000000001", "c0ffee01-0190-4234-8abc-def012345678",
	"b6f5e0a1e33c41d2a0101901234abcdef0a1b2c3d4e5f60718293a4b5c6d7e8",
	"whsec_0101901234abcdef0101901234abcdef0101901234abcdef0101901234ab",
	"faktura 123456789012, 12 timer", "2026-08-21T05:18:03.396217Z", "2026-08-21 05:18:03.396217", "05:18:03.396217",
	"2026-08-21T05:18:03.396217Z#62d2e7ca-07e8-4cc3-88b3-9f3362d21cbf", "2024-03-15 10:30-11:15", "18:03:39,6217 - 19.01",
	"2026-11-22T18:43:01.000000+02:00", "100%", "%zz", "&#xzz;", "", "a&b 50% 1.250.000,00 kr.",
	// A date and one time of day, as a meeting is written (round 4).
	"15.03.24 10.30", "15/03/24 10:30", "15.03.24, 10.30", "01.01.90 12.34", "01.01.90 12:34", "Møde 15.03.24 10.30 hos Anne",
	// Digests that start with digits that are not ten, and UUIDs with letters.
	"01019012abcdefabcdefabcdefabcdef01", "12 01019012abcdefabcdefabcdefabcdef", "010190123456abcdefabcdefabcdefabcdef",
	"01019012-34ab-4000-8000-000000000000",
}

func TestFind(t *testing.T) {
	t.Parallel()
	for _, s := range mustRefuse {
		if !cpr.Find(s) {
			t.Errorf("Find(%q) = false, want true", s)
		}
	}
	for _, s := range mustAccept {
		if cpr.Find(s) {
			t.Errorf("Find(%q) = true, want false", s)
		}
	}
}

// TestNoUUIDReadsAsACPR draws a million random UUIDs: ids are sent in
// bodies and returned everywhere, so none may be taken for a CPR, but
// for one shape. A UUID with no hex letter whose first six digits are a
// calendar date (DDMMYY) is round 4's probe (01019012-3400-4000-8000-…,
// in mustRefuse), a CPR written as a UUID, and reads as one by design:
// about one random UUID in 70 million, so this test met one in about one
// run of seventy (22050405-5781-4590-8928-947120084634, in a make test)
// and failed. Those are counted apart and must read as a CPR.
func TestNoUUIDReadsAsACPR(t *testing.T) {
	t.Parallel()
	shaped := 0
	for range draws() {
		id := uuid.NewString()
		if probeShaped(id) {
			shaped++
			if !cpr.Find(id) {
				t.Errorf("UUID %s, of digits and a date like round 4's probe, does not read as a CPR", id)
			}
			continue
		}
		if cpr.Find(id) || cpr.Find("client "+id+".") {
			t.Fatalf("UUID %s reads as a CPR", id)
		}
	}
	for _, id := range []string{"22050405-5781-4590-8928-947120084634", "01019012-3400-4000-8000-000000000000", "23089630-4635-4923-9160-572810106994"} {
		if !probeShaped(id) || !cpr.Find(id) {
			t.Errorf("%s: probe-shaped %v, read as a CPR %v; want both", id, probeShaped(id), cpr.Find(id))
		}
	}
	if probeShaped("32089630-4635-4923-9160-572810106994") || probeShaped("22050405-5781-4590-8928-94712008463a") {
		t.Error("a UUID with no date first, or with a hex letter, is probe-shaped")
	}
	t.Logf("%d of %d UUIDs had round 4's probe's shape", shaped, draws())
}

// probeShaped: id has no hex letter and the first ten digits an all-digit
// UUID reads as one group (cpr's maskOpaque: its first eight, then two)
// start with a calendar date.
func probeShaped(id string) bool {
	if strings.ContainsAny(strings.ToLower(id), "abcdef") {
		return false
	}
	_, err := time.Parse("020106", id[:6])
	return err == nil
}

func TestIsKey(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"cpr", "CPR", "cpr_number", "cprNr", "c.p.r.", "CPR-nummer", "personnummer", "person_nr", "ｃｐｒ",
		"c&#112;r", "c%70r", "c\u200bpr", "c\u3164pr"} {
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
	t.Parallel()
	for _, in := range []string{"unknown status 010190-1234", "a ０１０１９０－１２３４ b", "x 01 01 90 1234 y 020290-1234",
		"%30%31%30%31%39%30%31%32%33%34", "a ⓿❶⓿❶➈⓿❶❷❸❹ b", "&#48;10190-1234"} {
		out := cpr.Redact(in)
		if cpr.Find(out) || !strings.Contains(out, cpr.Marker) {
			t.Errorf("Redact(%q) = %q", in, out)
		}
	}
	for _, clean := range []string{"Møde 15.03.2024 kl. 10.30", "Møde 15.03.24 10.30-11.15"} {
		if got := cpr.Redact(clean); got != clean {
			t.Errorf("Redact changed clean text: %q", got)
		}
	}
	if got := cpr.Redact("a 010190-1234 b"); got != "a "+cpr.Marker+" b" {
		t.Errorf("Redact kept too little: %q", got)
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	var in any
	_ = json.Unmarshal([]byte(`{"name":"Nordlys ApS","owner":{"cpr":"010190-1234","name":"Anne","ids":["x","0101901234"]},
		"CPR-nr":"x","010190-1234":"key","employees":12,"note":"⓿❶⓿❶➈⓿_❶❷❸❹","web":"https://x.dk/?c=010190%2B1234"}`), &in)
	out, removed := cpr.Scrub(in)
	raw, _ := json.Marshal(out)
	if cpr.Find(string(raw)) || strings.Contains(strings.ToLower(string(raw)), "cpr\"") || removed != 6 {
		t.Fatalf("scrubbed %d: %s", removed, raw)
	}
	if !strings.Contains(string(raw), `"name":"Nordlys ApS"`) || !strings.Contains(string(raw), cpr.Marker) {
		t.Fatalf("scrub removed too much: %s", raw)
	}
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"010190-1234", "０１０１９０－１２３４", "a\u200b0", "\xff010190-1234", "&#48;10190-1234", "%30101901234"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if cpr.Find(cpr.Redact(s)) {
			t.Fatalf("Redact(%q) still holds a CPR", s)
		}
	})
}

// TestNoRandomIdempotencyKeyIsRefused draws a million keys of each form
// clients make at random: none may be refused (an idempotency key is
// stored only as an HMAC). The probe's key is among the 16-hex-digit ones.
func TestNoRandomIdempotencyKeyIsRefused(t *testing.T) {
	hexKey := func(n int) func() string {
		return func() string {
			b := make([]byte, n/2)
			_, _ = rand.Read(b)
			return hex.EncodeToString(b)
		}
	}
	forms := map[string]func() string{
		"UUID v4": uuid.NewString,
		"UUID v7": func() string { return uuid.Must(uuid.NewV7()).String() },
		"16 hex":  hexKey(16), "24 hex": hexKey(24), "32 hex": hexKey(32),
		"22 base64url": func() string {
			b := make([]byte, 16)
			_, _ = rand.Read(b)
			return base64.RawURLEncoding.EncodeToString(b)
		},
	}
	if cpr.InKey("c0906420218f408f") || cpr.InKey(strings.ToUpper("c0906420218f408f")) {
		t.Fatal("the probe's random key is refused")
	}
	if cpr.InKey("23089630-4635-4923-9160-572810106994") { // a random UUID without a letter, drawn once by this test
		t.Fatal("a UUID of digits alone is refused")
	}
	for name, next := range forms {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for range draws() {
				if k := next(); cpr.InKey(k) {
					t.Fatalf("random key %s is refused", k)
				}
			}
		})
	}
}

// TestKeysThatAreCPRsAreRefused: a key that is not a random id is read as
// text.
func TestKeysThatAreCPRsAreRefused(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"010190-1234", "0101901234", "import-0101901234", "cpr 010190 1234", "010190ー1234", "01.01.1990-1234"} {
		if !cpr.InKey(k) {
			t.Errorf("InKey(%q) = false", k)
		}
	}
}

// draws is how many random values a property test draws: a million, or ten
// thousand in the fast loop (-short).
func draws() int {
	if testing.Short() {
		return 10_000
	}
	return 1_000_000
}
