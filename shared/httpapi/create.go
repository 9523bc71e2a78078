package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/idemkey"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted, in characters.
const MaxIdempotencyKey = 255

// CreateFunc validates req.Body and creates the resource in one transaction
// committed with req.Commit. It returns the resource's id and the resource.
// C is the create the wiring's IdempotencyKeys begins (*idempotency.Create).
type CreateFunc[C idemkey.Create] func(ctx context.Context, req C) (id string, resource any, err error)

// ServeCreate is the one idempotency wrapper of every POST create:
//
//  1. the Idempotency-Key header is required, at most 255 characters (422);
//  2. the body is read and hashed in canonical form (key order and
//     whitespace do not matter; values do);
//  3. the create runs, and its one transaction binds the key (scoped to
//     the organisation and endpoint) with the resource;
//  4. when the key is bound already, that transaction is cancelled and
//     writes nothing, and its cancellation carries the bound record: the
//     same body → 200 replay of the original answer with
//     Idempotent-Replayed: true; a different body → 409; a request with
//     the key still in flight → 409 with Retry-After;
//  5. a create that fails writes nothing, so the key stays unused and the
//     caller can fix the payload and resend under it; a create refused
//     before its transaction looks the key up, and a bound key answers as
//     in 4 (a different body is 409 whether or not it is valid).
//
// A create that would write before its transaction (an auto-numbered
// matter takes its number from a counter) looks its key up first
// (idempotency.Create.CheckKey), so that a replay writes nothing.
//
// locationPath is the resource's path below /api/v1 ("/people"), or ""
// for resources without a single read (no Location header). C is the type
// of create the wiring's IdempotencyKeys begins (*idempotency.Create): the
// edge hands create what Begin made, and answers 500 (a wiring mistake)
// when that is not a C.
func ServeCreate[C idemkey.Create](w http.ResponseWriter, r *http.Request, endpoint, locationPath string, create CreateFunc[C]) {
	env := envFrom(r.Context())
	key := r.Header.Get("Idempotency-Key")
	switch {
	case key == "":
		WriteError(w, r, keyProblem("Idempotency-Key", "the Idempotency-Key header is required on every create: send a unique string (at most %d characters) per record, and the same one when you retry", MaxIdempotencyKey))
		return
	case utf8.RuneCountInString(key) > MaxIdempotencyKey:
		WriteError(w, r, keyProblem("Idempotency-Key", "the Idempotency-Key header is longer than %d characters", MaxIdempotencyKey))
		return
	case cpr.InKey(key): // random hex keys are never read as one (cpr.InKey)
		WriteError(w, r, keyProblem("Idempotency-Key", "CPR numbers are never accepted, in any field or form; the Idempotency-Key header holds one: key the create with your record's id instead"))
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		WriteError(w, r, err)
		return
	}
	now := env.now()
	b := idemkey.Binding{Org: env.client.OrgID, Endpoint: endpoint, Key: key, BodyHash: canonicalHash(raw), Now: now}
	begun := env.idem.Begin(b, env.client.ID, raw, func(id string) string {
		if locationPath == "" {
			return ""
		}
		return AbsoluteURL(r, routes.Prefix+locationPath+"/"+id)
	})
	req, ok := begun.(C)
	if !ok {
		WriteError(w, r, fmt.Errorf("httpapi: the idempotency keys begin %T, and the create of %s takes %T", begun, endpoint, req))
		return
	}
	id, resource, err := create(r.Context(), req)
	var taken idemkey.Taken
	if errors.As(err, &taken) {
		// Another request with this key got there first: answer as it did.
		rec := taken.BoundKey()
		err = nil
		if rec == nil {
			rec, err = env.idem.LookupBound(r.Context(), b.Org, endpoint, key, true, now)
		}
		switch {
		case err != nil:
			WriteError(w, r, err)
		case rec != nil:
			answerBound(w, r, rec, b.BodyHash)
		default:
			// Its transaction is still running: once it ends, a retry replays.
			WriteError(w, r, &Error{Status: http.StatusConflict, Code: CodeIdempotencyKeyInUse, RetryAfter: 1, Message: "a request with this Idempotency-Key is still being processed; retry after it finishes"})
		}
		return
	}
	if err != nil && IsRefusal(err) {
		// Refused before its transaction (a body that is not valid, or not
		// any more: a replay's matter closed since). A key that is bound
		// answers for the request as for any other: a replay, or 409.
		if rec, lerr := env.idem.LookupBound(r.Context(), b.Org, endpoint, key, false, now); lerr == nil && rec != nil {
			answerBound(w, r, rec, b.BodyHash)
			return
		}
	}
	if err != nil {
		WriteError(w, r, err)
		return
	}
	if loc := req.Location(id); loc != "" {
		w.Header().Set("Location", loc)
	}
	if req.Answer() == nil {
		WriteJSON(w, http.StatusCreated, Data(resource))
		return
	}
	// The bytes the key was bound with: a replay answers the same.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"data":`+string(req.Answer())+"}\n")
}

// answerBound answers a request whose key is bound: a replay of the first
// answer for the same body, 409 for another.
func answerBound(w http.ResponseWriter, r *http.Request, rec *idemkey.Bound, hash string) {
	if rec.BodyHash != hash {
		WriteError(w, r, &Error{Status: http.StatusConflict, Code: CodeIdempotencyKeyReused, Message: "this Idempotency-Key was already used with a different request body; use a new key for a different record"})
		return
	}
	if rec.Location != "" {
		w.Header().Set("Location", rec.Location)
	}
	w.Header().Set("Idempotent-Replayed", "true")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"data":`+rec.Response+"}\n")
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

// keyProblem is the 422 of a missing or unusable Idempotency-Key.
func keyProblem(field, format string, args ...any) *Error {
	e := Invalid(field, format, args...)
	e.Code = CodeIdempotencyKeyRequired
	return e
}
