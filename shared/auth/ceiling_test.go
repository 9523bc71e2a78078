package auth

import "testing"

// TestCeilingOfFollowsTheStagesDefault: an organisation without a ceiling
// of its own admits 300 requests a second, or 150 keys at the stage's
// default limit when that is more (a local test stage serving 100,000 a
// minute must still admit a key); one it was given is its own.
func TestCeilingOfFollowsTheStagesDefault(t *testing.T) {
	for _, c := range []struct {
		stage, own, want int
	}{
		{0, 0, DefaultOrgCeiling},
		{120, 0, DefaultOrgCeiling},
		{60, 0, DefaultOrgCeiling},
		{1000, 0, 150_000},
		{100_000, 0, 15_000_000},
		{100_000, 500, 500},
	} {
		s := NewStore(nil, c.stage)
		if got := s.CeilingOf(Org{RateCeiling: c.own}); got != c.want {
			t.Errorf("stage default %d, own ceiling %d: %d, want %d", c.stage, c.own, got, c.want)
		}
	}
}
