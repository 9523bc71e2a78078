package families_test

import "slices"

// afterAuth is what a request's store calls were after its authentication:
// the read of its client and the count (auth.Store.Authenticate), made at
// once, so in either order; ok is false when ops do not begin with them.
func afterAuth(ops []string) (rest []string, ok bool) {
	if len(ops) < 2 {
		return ops, false
	}
	first := []string{ops[0], ops[1]}
	slices.Sort(first)
	if !slices.Equal(first, []string{"GetItem", "UpdateItem"}) {
		return ops, false
	}
	return ops[2:], true
}
