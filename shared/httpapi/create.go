package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/idempotency"
	"github.com/practice-api/practice-api/shared/store"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted, in characters.
const MaxIdempotencyKey = 255

// CreateRequest is what a create sees: the caller, the validated-to-be body,
// the clock, and the completion to put in its transaction.
type CreateRequest struct {
	Org      string
	ClientID string
	Body     []byte
	Now      time.Time
	claim    *idempotency.Claim
	location func(id string) string
}

// Completion is the transaction item that binds the Idempotency-Key to the
// resource (id, and what the 201 answers). A create must commit it in the
// same transaction as the resource, its guards and its events.
func (c *CreateRequest) Completion(id string, resource any) (ddbtypes.TransactWriteItem, error) {
	resp, err := json.Marshal(resource)
	if err != nil {
		return ddbtypes.TransactWriteItem{}, err
	}
	return c.claim.Complete(id, c.location(id), resp), nil
}

// CreateFunc validates req.Body and creates the resource in one transaction
// that includes req.Completion. It returns the resource's id and the resource.
type CreateFunc func(ctx context.Context, req *CreateRequest) (id string, resource any, err error)

// ServeCreate is the one idempotency wrapper of every POST create:
//
//  1. the Idempotency-Key header is required, at most 255 characters (422);
//  2. the body is read and hashed in canonical form (key order and
//     whitespace do not matter; values do);
//  3. the key, scoped to the organisation and endpoint, is claimed with one
//     conditional write that returns the existing record when it fails:
//     the same body completed → 200 replay of the original answer with
//     Idempotent-Replayed: true; a different body, or the first request
//     still running → 409 at once;
//  4. the create runs; its transaction completes the key atomically;
//  5. any failure releases the key, so the caller can fix and resend.
//
// locationPath is the resource's path below /api/v1 ("/people"), or ""
// for resources without a single read (no Location header).
func ServeCreate(w http.ResponseWriter, r *http.Request, endpoint, locationPath string, create CreateFunc) {
	env := envFrom(r.Context())
	key := r.Header.Get("Idempotency-Key")
	switch {
	case key == "":
		WriteError(w, r, Invalid("Idempotency-Key", "the Idempotency-Key header is required on every create: send a unique string (at most %d characters) per record, and the same one when you retry", MaxIdempotencyKey))
		return
	case utf8.RuneCountInString(key) > MaxIdempotencyKey:
		WriteError(w, r, Invalid("Idempotency-Key", "the Idempotency-Key header is longer than %d characters", MaxIdempotencyKey))
		return
	case cpr.Find(key):
		WriteError(w, r, Invalid("Idempotency-Key", "CPR numbers are never accepted, in any field or form; the Idempotency-Key header holds one: key the create with your record's id instead"))
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	now := env.now()
	hash := canonicalHash(raw)
	claim, existing, err := env.idem.Claim(r.Context(), env.client.OrgID, endpoint, key, hash, now)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if existing != nil {
		switch {
		case existing.BodyHash != hash:
			WriteError(w, r, &Error{Status: http.StatusConflict, Message: "this Idempotency-Key was already used with a different request body; use a new key for a different record"})
		case existing.State != idempotency.StateCompleted:
			// Unlike a different body, this conflict passes: once the first
			// request finishes (or its lock lapses) a retry replays or creates.
			w.Header().Set("Retry-After", "1")
			WriteError(w, r, &Error{Status: http.StatusConflict, Message: "a request with this Idempotency-Key is still being processed; retry after it finishes"})
		default:
			if existing.Location != "" {
				w.Header().Set("Location", existing.Location)
			}
			w.Header().Set("Idempotent-Replayed", "true")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, `{"data":`+existing.Response+"}\n")
		}
		return
	}
	req := &CreateRequest{Org: env.client.OrgID, ClientID: env.client.ID, Body: raw, Now: now, claim: claim,
		location: func(id string) string {
			if locationPath == "" {
				return ""
			}
			return AbsoluteURL(r, routes.Prefix+locationPath+"/"+id)
		}}
	id, resource, err := create(r.Context(), req)
	if err != nil {
		// The key goes back to unused. Release is conditional on the claim
		// being still in progress: a transaction that committed keeps it.
		if rerr := claim.Release(context.WithoutCancel(r.Context())); rerr != nil {
			err = errors.Join(err, rerr)
		}
		WriteError(w, r, err)
		return
	}
	if loc := req.location(id); loc != "" {
		w.Header().Set("Location", loc)
	}
	WriteJSON(w, http.StatusCreated, Data(resource))
}

// canonicalHash hashes the body as canonical JSON (sorted keys, no
// insignificant whitespace, numbers as written); a body that is not JSON is
// hashed as bytes.
func canonicalHash(raw []byte) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // 1250 and 1250.00 are different bodies
	if err := dec.Decode(&v); err == nil && !dec.More() {
		if c, err := json.Marshal(v); err == nil {
			raw = c
		}
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// AbsoluteURL is path on the API's public base URL (Config.PublicBaseURL),
// never on the request's Host header: a Location stored with an
// idempotency record and replayed for a day must not point where a forged
// Host said.
func AbsoluteURL(r *http.Request, path string) string {
	base, _ := r.Context().Value(baseURLKey).(string)
	return base + path
}

type baseURLKeyType struct{}

var baseURLKey baseURLKeyType

// Commit adds the idempotency completion for (id, resource) to tx and
// commits. When conditions fail, explain turns the failed items into the
// client's error (a 422 naming the conflict); a lost claim is a 409.
func (c *CreateRequest) Commit(ctx context.Context, tx *store.TxBuilder, id string, resource any, explain func(*store.TxFailed) error) error {
	comp, err := c.Completion(id, resource)
	if err != nil {
		return err
	}
	ci := tx.Add(comp)
	err = tx.Commit(ctx)
	var failed *store.TxFailed
	if !errors.As(err, &failed) {
		return err
	}
	if failed.Has(ci) {
		return &Error{Status: http.StatusConflict, Message: "this request outlived its hold on the Idempotency-Key and another request took the key over; nothing was created by this one"}
	}
	if xerr := explain(failed); xerr != nil {
		return xerr
	}
	return err
}
