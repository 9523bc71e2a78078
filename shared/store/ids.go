package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/cpr"
)

// Identifiers are UUID strings (the spec), of four kinds:
//
//   - TimeID: a UUIDv7 of an instant (milliseconds, then the microseconds
//     within it in rand_a), so that ids sort by time: delivery attempts,
//     events.
//   - DateID: a UUIDv8 whose first eight hex digits are a calendar date's
//     YYYYMMDD, so that ids sort by that date: time entries, which every
//     list orders and ranges by entry date.
//   - DerivedID: a UUIDv8 of an HMAC, under the stage's own key, of an
//     organisation and a value that must be unique in it (a CVR, an
//     e-mail, a party, a matter number): the item's own key is then its
//     uniqueness guard, so a create writes no guard item. The HMAC keeps
//     ids from revealing the values they are derived from.
//   - NewID: a random UUIDv4, for every other item an integrator sees.
//
// No id drawn at random reads as a CPR number. A UUID with no hex letter
// whose first six digits are a calendar date (DDMMYY) is a CPR written as
// a UUID to cpr.Find (shared/cpr's probe-shaped UUIDs), and a write body
// that carries one is refused: the service's own id, sent back as an
// invoice line's time_entry_id, would answer 422. For a random UUID that
// is about one in 70 million; for a DateID of 2001 to 2012, whose first
// digits are the date, about one in 60,000 (its 22 random hex digits and
// its variant all decimal). So NewID, TimeID and DateID draw again until
// cpr.Find does not read the id. A DerivedID cannot be drawn again: the
// same value must give the same id; its 30 free hex digits and variant
// all decimal, with a date first, come about once in 75 million values.

// mint returns the first id draw makes that cpr.Find does not read (the
// doc above). Sixteen draws bound it, should a future rule read every id
// of some shape: a create must never spin.
func mint(draw func() string) string {
	id := draw()
	for range 16 {
		if !cpr.Find(id) {
			break
		}
		id = draw()
	}
	return id
}

// NewID is a random UUIDv4 (uuid.NewString) that does not read as a CPR.
func NewID() string { return mint(uuid.NewString) }

// TimeID is a UUIDv7 of t with microsecond order (RFC 9562's "increased
// clock precision" in rand_a) and 62 random bits.
func TimeID(t time.Time) string { return timeID(t, rand.Reader) }

func timeID(t time.Time, random io.Reader) string {
	return mint(func() string {
		var b [16]byte
		_, _ = io.ReadFull(random, b[8:])
		ms := uint64(t.UnixMilli())
		for i := 0; i < 6; i++ {
			b[i] = byte(ms >> (40 - 8*i))
		}
		us := uint16(t.Nanosecond() / 1000 % 1000)
		b[6] = 0x70 | byte(us>>8)
		b[7] = byte(us)
		b[8] = 0x80 | b[8]&0x3f
		return uuid.UUID(b).String()
	})
}

// DateID is a UUIDv8 whose text starts with date's YYYYMMDD (date is
// YYYY-MM-DD): ids of the same date sort together, dates in order.
func DateID(date string) string { return dateID(date, rand.Reader) }

func dateID(date string, random io.Reader) string {
	return mint(func() string {
		var b [16]byte
		_, _ = io.ReadFull(random, b[:])
		d := strings.ReplaceAll(date, "-", "")
		for i := 0; i < 4 && 2*i+1 < len(d); i++ {
			b[i] = (d[2*i]-'0')<<4 | (d[2*i+1] - '0')
		}
		b[6] = 0x80 | b[6]&0x0f
		b[8] = 0x80 | b[8]&0x3f
		return uuid.UUID(b).String()
	})
}

// DateOf is the YYYYMMDD prefix of the DateIDs of date (YYYY-MM-DD), the
// bound of an id range.
func DateOf(date string) string { return strings.ReplaceAll(date, "-", "") }

// DerivedID is the id of the item of org whose unique value in namespace
// is value; ErrNoIDKey until LoadIDKey has run.
func (db *DB) DerivedID(ctx context.Context, org, namespace, value string) (string, error) {
	key, err := db.idKey(ctx)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	for _, part := range []string{org, namespace, value} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	var b [16]byte
	copy(b[:], m.Sum(nil))
	b[6] = 0x80 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	return uuid.UUID(b).String(), nil
}

// idKeys holds each table's id key once loaded: the stage's own secret
// (CONFIG/SECRET#ids), the same for every process of the stage, so that
// every process derives the same id for the same value. A failed load is
// not kept: the next call tries again.
var idKeys sync.Map // table name -> []byte

// LoadIDKey reads (or makes) the id key at a process's start, so that no
// request pays for it; DerivedID loads it itself otherwise.
func (db *DB) LoadIDKey(ctx context.Context) error {
	_, err := db.idKey(ctx)
	return err
}

func (db *DB) idKey(ctx context.Context) ([]byte, error) {
	if k, ok := idKeys.Load(db.Table); ok {
		return k.([]byte), nil
	}
	k, err := db.LoadOrCreateSecret(ctx, "ids")
	if err != nil {
		return nil, fmt.Errorf("store: the id key: %w", err)
	}
	idKeys.Store(db.Table, k)
	return k, nil
}
