package cpr

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// separators are code points that show neither a letter nor a digit, even
// under NFKC: what may stand between the digits of a CPR.
var separators = func() []rune {
	var out []rune
	for r := rune(0); r <= 0x2FFFF; r++ {
		if !utf8.ValidRune(r) || unicode.Is(unicode.Co, r) || unicode.Is(unicode.Cn, r) {
			continue
		}
		if !strings.ContainsFunc(norm.NFKC.String(string(r)), func(n rune) bool {
			return unicode.IsLetter(n) && !unicode.Is(unicode.Other_Default_Ignorable_Code_Point, n) || unicode.IsNumber(n)
		}) {
			if _, digit := digitsOf(r); digit {
				continue
			}
			out = append(out, r)
		}
	}
	return out
}()

// randomCPR is a valid CPR: a calendar date and any serial.
func randomCPR(rng *rand.Rand) string {
	day, month := 1+rng.IntN(28), 1+rng.IntN(12)
	b := []byte{byte('0' + day/10), byte('0' + day%10), byte('0' + month/10), byte('0' + month%10)}
	for range 6 {
		b = append(b, byte('0'+rng.IntN(10)))
	}
	return string(b)
}

// FuzzCPRWithSeparators inserts random non-alphanumeric code points
// (any number, anywhere) between the digits of a CPR, inside text: every
// result must be found.
func FuzzCPRWithSeparators(f *testing.F) {
	for _, seed := range []uint64{1, 2, 3, 42, 1 << 40} {
		f.Add(seed, "Ring på ", " i morgen")
	}
	f.Fuzz(func(t *testing.T, seed uint64, before, after string) {
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		digits := randomCPR(rng)
		var b strings.Builder
		for i, d := range digits {
			if i > 0 {
				for range rng.IntN(4) {
					b.WriteRune(separators[rng.IntN(len(separators))])
				}
			}
			b.WriteRune(d)
		}
		// Context must not join the number: end it with a letter either side.
		s := strings.TrimRight(before, "0123456789") + "x " + b.String() + " x" + strings.TrimLeft(after, "0123456789")
		if !utf8.ValidString(before) || !utf8.ValidString(after) {
			return
		}
		if !Find(s) {
			t.Fatalf("CPR %s in %q (%+q) not found", digits, s, b.String())
		}
	})
}

// TestCPRWithSeparatorsAtRandom runs the fuzz property on 20,000 draws in
// every make test (the fuzzer itself runs with go test -fuzz).
func TestCPRWithSeparatorsAtRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	for range 20_000 {
		digits := randomCPR(rng)
		var b strings.Builder
		for i, d := range digits {
			if i > 0 {
				for range rng.IntN(4) {
					b.WriteRune(separators[rng.IntN(len(separators))])
				}
			}
			b.WriteRune(d)
		}
		if !Find(b.String()) {
			t.Fatalf("CPR %s as %+q not found", digits, b.String())
		}
	}
	t.Logf("%d separator code points drawn from", len(separators))
}
