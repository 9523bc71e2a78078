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
	for _, date := range []string{"2001-01-01", "2005-06-30", "2011-03-15", "2012-12-31"} {
		t.Run("DateID "+date, func(t *testing.T) {
			// What the first draw alone gives: the id the old DateID could mint.
			old := store.DateIDFrom(date, bytes.NewReader(bytes.Repeat([]byte{0x11}, 16)))
			if !cpr.Find(old) {
				t.Fatalf("%s: a DateID of digits alone does not read as a CPR, so this test tests nothing", old)
			}
			id := store.DateIDFrom(date, decimalFirst(16))
			if cpr.Find(id) {
				t.Fatalf("DateID %s reads as a CPR", id)
			}
			if !strings.HasPrefix(id, store.DateOf(date)) || id == old {
				t.Fatalf("DateID %s: not drawn again, or not of %s", id, date)
			}
		})
	}
	t.Run("TimeID", func(t *testing.T) {
		// An instant whose milliseconds' hex is decimal (0x011111111111,
		// in 2007; today's have hex letters).
		at := time.UnixMilli(0x011111111111)
		old := store.TimeIDFrom(at, bytes.NewReader(bytes.Repeat([]byte{0x11}, 8)))
		if !cpr.Find(old) {
			t.Fatalf("%s: a TimeID of digits alone does not read as a CPR, so this test tests nothing", old)
		}
		id := store.TimeIDFrom(at, decimalFirst(8))
		if cpr.Find(id) {
			t.Fatalf("TimeID %s reads as a CPR", id)
		}
		if id[:13] != old[:13] {
			t.Fatalf("TimeID %s is not of the instant of %s", id, old)
		}
	})
}
