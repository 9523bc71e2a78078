package store_test

import (
	"bytes"
	"crypto/rand"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/store"
)

// decimalFirst reads as randomness whose first n bytes are all 0x11 (hex
// "11": a decimal digit pair), then crypto/rand's: the draw that would
// make an id of digits alone comes first.
func decimalFirst(n int) io.Reader {
	return io.MultiReader(bytes.NewReader(bytes.Repeat([]byte{0x11}, n)), rand.Reader)
}

// TestMintedIDsNeverReadAsACPR: a DateID of 2001 to 2012 starts with
// digits cpr.Find reads as a date (DDMMYY), so one whose random digits
// came out decimal (about one in 60,000) read as a CPR written as a UUID,
// and a write body that sent it back was refused. Each id maker is handed
// a first draw of decimal digits alone: the id it returns is drawn again,
// and is still of its kind (the date first; the instant's order).
func TestMintedIDsNeverReadAsACPR(t *testing.T) {
	t.Parallel()
	type maker struct {
		name string
		make func(random io.Reader) string
		n    int                  // bytes of randomness a draw takes
		kind func(id string) bool // still of its kind
	}
	var makers []maker
	for _, date := range []string{"2001-01-01", "2005-06-30", "2011-03-15", "2012-12-31"} {
		makers = append(makers, maker{"DateID " + date, func(r io.Reader) string { return store.DateIDFrom(date, r) }, 16,
			func(id string) bool { return strings.HasPrefix(id, store.DateOf(date)) }})
	}
	// An instant whose milliseconds' hex is decimal (0x011111111111, in
	// 2007; today's have hex letters).
	at := time.UnixMilli(0x011111111111)
	instant := store.TimeIDFrom(at, rand.Reader)[:13]
	makers = append(makers, maker{"TimeID", func(r io.Reader) string { return store.TimeIDFrom(at, r) }, 8,
		func(id string) bool { return id[:13] == instant }})
	for _, m := range makers {
		t.Run(m.name, func(t *testing.T) {
			// What the first draw alone gives: the id the old maker could mint.
			old := m.make(bytes.NewReader(bytes.Repeat([]byte{0x11}, m.n)))
			if !cpr.Find(old) {
				t.Fatalf("%s: an id of digits alone does not read as a CPR, so this test tests nothing", old)
			}
			id := m.make(decimalFirst(m.n))
			if cpr.Find(id) {
				t.Fatalf("%s reads as a CPR", id)
			}
			if id == old || !m.kind(id) {
				t.Fatalf("%s: not drawn again (the first draw gave %s), or not of its kind", id, old)
			}
		})
	}
}
