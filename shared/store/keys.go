package store

import (
	"time"

	"github.com/practice-api/practice-api/shared/listing"
)

// TimeLayout is the fixed-width UTC form used for every timestamp in keys and
// responses, so that string order is time order (listing's, which the
// edge's time parameters use without linking the store).
const TimeLayout = listing.TimeLayout

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return listing.FormatTime(t) }

// OrgPK is the base-table partition of an organisation: every item of an
// organisation lives under it, so a read without the caller's organisation
// cannot reach another one's rows.
func OrgPK(org string) string { return "O#" + org }

// Collection is the partition of a GSI that lists one item type, optionally
// narrowed by further segments, within an organisation
// (Collection(org, "MATTER", "CLIENT", id) = "O#org#MATTER#CLIENT#id").
func Collection(org string, parts ...string) string {
	s := OrgPK(org)
	for _, p := range parts {
		s += "#" + p
	}
	return s
}

// Seq builds a sort key that orders by a value and breaks ties by id.
func Seq(value, id string) string { return value + "#" + id }

// NextUpdate is the updated_at of a change made at now to an item last
// changed at prev: now, or one microsecond after prev when the clocks of two
// writers disagree, so that updated_at (and updated_since) never go back.
func NextUpdate(prev string, now time.Time) string {
	next := FormatTime(now)
	if next > prev {
		return next
	}
	if t, err := time.Parse(TimeLayout, prev); err == nil {
		return FormatTime(t.Add(time.Microsecond))
	}
	return next
}
