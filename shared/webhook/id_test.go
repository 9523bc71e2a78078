package webhook

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

func TestTimeOrderedIDsAreUUIDv7AndSortByTime(t *testing.T) {
	base := time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)
	steps := []time.Duration{0, time.Microsecond, 999 * time.Microsecond, time.Millisecond, time.Second, 24 * time.Hour}
	prev := ""
	for _, d := range steps {
		id := timeOrderedID(base.Add(d))
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: version %d variant %v err %v", id, u.Version(), u.Variant(), err)
		}
		if sec, _ := u.Time().UnixTime(); sec != base.Add(d).Unix() {
			t.Fatalf("%s: time %d, want %d", id, sec, base.Add(d).Unix())
		}
		if id <= prev {
			t.Fatalf("%s sorts before %s, which is %v older", id, prev, d)
		}
		prev = id
	}
	if a, b := timeOrderedID(base), timeOrderedID(base); a == b {
		t.Fatal("two ids of one instant are equal")
	}
}
