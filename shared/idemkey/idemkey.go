// Package idemkey is what the edge (httpapi) knows of Idempotency-Keys:
// the binding a create's key is about to get, a key already bound (what
// its first success answered), a create in flight, and the error of a
// create whose key another request took. The records' store
// (shared/idempotency) binds keys in the creates' transactions; the edge
// depends on it through httpapi.IdempotencyKeys, whose types are these, so
// that it links no store and no AWS SDK.
//
// It imports nothing of ours.
package idemkey

import "time"

// Binding is a key about to be bound: the organisation and endpoint it is
// scoped to, the key, the hash of the request's canonical body, and the
// request's time.
type Binding struct {
	Org, Endpoint, Key, BodyHash string
	Now                          time.Time
}

// Bound is a bound key: what the first success answered.
type Bound struct {
	BodyHash string // of the body the key was bound with
	Response string // the created resource, as JSON
	Location string // the resource's URL; "" for none
}

// Create is a create in flight as the edge sees it: where its resource
// will be, and what its key was bound with once it committed.
type Create interface {
	// Location is the absolute URL of the resource id, or "" for
	// resources without a single read.
	Location(id string) string
	// Answer is the resource as the key was bound with it (JSON) once the
	// create committed; nil before, or for a create that binds no key.
	Answer() []byte
}

// Taken is the error of a create whose key another request bound first:
// BoundKey is what that request answered, or nil while its transaction is
// still running (or the store did not return the record; the edge then
// looks again).
type Taken interface {
	error
	BoundKey() *Bound
}
