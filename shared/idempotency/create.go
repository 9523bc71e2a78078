package idempotency

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/clock"
	"github.com/practice-api/practice-api/shared/store"
)

// Keys reads and binds keys (*Store, or a test's own).
type Keys interface {
	Lookup(ctx context.Context, org, endpoint, key string, consistent bool, now time.Time) (*Record, error)
	Item(b Binding, resourceID, location string, response []byte) (ddbtypes.TransactWriteItem, error)
}

// Create is what a create sees: the caller, the body it sent, the clock,
// and the key binding to put in its transaction. The edge
// (httpapi.ServeCreate) makes one per request; a domain package's create
// validates Body and commits its transaction with Commit. It speaks no
// HTTP: its errors are the store's, apperr's and Taken.
type Create struct {
	Org      string
	ClientID string
	Body     []byte
	Now      time.Time
	keys     Keys
	binding  Binding
	location func(id string) string
	answer   []byte // the resource as JSON, as bound with the key
}

// NewCreate is the create of a request bound as b, whose resource will be
// at location(id) ("" for none).
func NewCreate(keys Keys, b Binding, clientID string, body []byte, location func(id string) string) *Create {
	return &Create{Org: b.Org, ClientID: clientID, Body: body, Now: b.Now, keys: keys, binding: b, location: location}
}

// Location is the resource's location (its absolute URL), or "".
func (c *Create) Location(id string) string {
	if c.location == nil {
		return ""
	}
	return c.location(id)
}

// Answer is the resource as the key was bound with it (JSON), once
// Commit succeeded; nil before.
func (c *Create) Answer() []byte { return c.answer }

// CheckKey looks the request's key up before a create writes anything
// outside its transaction (a counter): a bound key ends the create with
// *Taken, which the edge answers, so that a replay writes nothing.
// Creates that write only in their transaction need not call it.
func (c *Create) CheckKey(ctx context.Context) error {
	rec, err := c.keys.Lookup(ctx, c.binding.Org, c.binding.Endpoint, c.binding.Key, false, c.binding.Now)
	if err != nil {
		return err
	}
	if rec != nil {
		return &Taken{Record: rec}
	}
	return nil
}

// txAttempts bounds the commits of a create whose transaction lost to a
// concurrent one on its other items (two creates checking the same client):
// nothing was written, so it is simply sent again.
const txAttempts = 3

// Commit adds the key's binding for (id, resource) to tx and commits. When
// conditions fail, explain turns the failed items into the domain's error
// (an apperr naming the conflict); a binding that fails is *Taken (the
// edge answers it); transactions lost to concurrent ones are retried,
// then apperr.ConcurrentChange.
func (c *Create) Commit(ctx context.Context, tx *store.TxBuilder, id string, resource any, explain func(*store.TxFailed) error) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as the edge writes JSON
	if err := enc.Encode(resource); err != nil {
		return err
	}
	resp := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	bind, err := c.keys.Item(c.binding, id, c.Location(id), resp)
	if err != nil {
		return err
	}
	bi := tx.Add(bind)
	for attempt := 1; ; attempt++ {
		err = tx.Commit(ctx)
		if err == nil {
			c.answer = resp
			return nil
		}
		var failed *store.TxFailed
		if !errors.As(err, &failed) {
			return err
		}
		switch {
		case failed.Has(bi):
			return &Taken{Record: RecordOf(failed.Items[bi], c.binding.Now)}
		case failed.Conflict(bi):
			return &Taken{}
		case len(failed.Failed) > 0:
			if xerr := explain(failed); xerr != nil {
				return xerr
			}
			return err
		case attempt < txAttempts:
			if err := clock.Sleep(ctx, time.Duration(attempt*attempt)*20*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		return apperr.New(apperr.ConcurrentChange, "other requests were changing the same records; nothing was created: retry the request").After(1)
	}
}
