package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Identifiers are UUID strings (the spec), of three kinds:
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

// TimeID is a UUIDv7 of t with microsecond order (RFC 9562's "increased
// clock precision" in rand_a) and 62 random bits.
func TimeID(t time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[8:])
	ms := uint64(t.UnixMilli())
	for i := 0; i < 6; i++ {
		b[i] = byte(ms >> (40 - 8*i))
	}
	us := uint16(t.Nanosecond() / 1000 % 1000)
	b[6] = 0x70 | byte(us>>8)
	b[7] = byte(us)
	b[8] = 0x80 | b[8]&0x3f
	return uuid.UUID(b).String()
}

// DateID is a UUIDv8 whose text starts with date's YYYYMMDD (date is
// YYYY-MM-DD): ids of the same date sort together, dates in order.
func DateID(date string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	d := strings.ReplaceAll(date, "-", "")
	for i := 0; i < 4 && 2*i+1 < len(d); i++ {
		b[i] = (d[2*i]-'0')<<4 | (d[2*i+1] - '0')
	}
	b[6] = 0x80 | b[6]&0x0f
	b[8] = 0x80 | b[8]&0x3f
	return uuid.UUID(b).String()
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
