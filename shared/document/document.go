// Package document holds the register of document metadata: name,
// filename, MIME type, size, matter and folder. The service never holds a
// document's bytes, a download URL or a preview, so none can leak.
package document

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/store"
)

// Document is one register entry.
type Document struct {
	store.Keys    `json:"-"`
	ID            string `dynamodbav:"id" json:"id"`
	MatterID      string `dynamodbav:"matter_id" json:"matter_id"`
	Name          string `dynamodbav:"name" json:"name"`
	Filename      string `dynamodbav:"filename" json:"filename"`
	MimeType      string `dynamodbav:"mime_type" json:"mime_type"`
	SizeBytes     int64  `dynamodbav:"size_bytes" json:"size_bytes"`
	Folder        string `dynamodbav:"folder" json:"folder"`
	SigningFlowID string `dynamodbav:"signing_flow_id,omitempty" json:"signing_flow_id,omitempty"`
	SignedAt      string `dynamodbav:"signed_at,omitempty" json:"signed_at,omitempty"`
	CreatedAt     string `dynamodbav:"created_at" json:"created_at"`
	UpdatedAt     string `dynamodbav:"updated_at" json:"updated_at"`
}

// FlowStatus is the state of a signing flow. The application runs the
// flow; this service records it only when it is sealed.
type FlowStatus string

// Sealed is a signing flow every party has signed.
const Sealed FlowStatus = "sealed"

// SigningFlow is a document's signing, sealed when every party has signed.
type SigningFlow struct {
	store.Keys `json:"-"`
	ID         string     `dynamodbav:"id" json:"id"`
	DocumentID string     `dynamodbav:"document_id" json:"document_id"`
	MatterID   string     `dynamodbav:"matter_id" json:"matter_id"`
	Status     FlowStatus `dynamodbav:"status" json:"status"`
	SealedAt   string     `dynamodbav:"sealed_at" json:"sealed_at"`
}

func docSK(id string) string { return "DOC#" + id }

// SetKeys fills the keys: GSI1 all by last change, GSI2 by matter, GSI3 by
// folder; updated_since bounds the sort key of each.
func (d *Document) SetKeys(org string) {
	seq := store.Seq(d.UpdatedAt, d.ID)
	d.Keys = store.Keys{PK: store.OrgPK(org), SK: docSK(d.ID), Kind: "document",
		GSI1PK: store.Collection(org, "DOC"), GSI1SK: seq,
		GSI2PK: store.Collection(org, "DOC", "MATTER", d.MatterID), GSI2SK: seq,
		GSI3PK: store.Collection(org, "DOC", "FOLDER", d.Folder), GSI3SK: seq}
}

// Guards: a document holds no unique values.
func (d *Document) Guards(string) []store.Guard { return nil }

// Store keeps the register.
type Store struct{ db *store.DB }

// NewStore returns a Store on db.
func NewStore(db *store.DB) *Store { return &Store{db: db} }

// Get reads one entry.
func (s *Store) Get(ctx context.Context, org, id string) (Document, error) {
	return store.GetInto[Document](ctx, s.db, store.OrgPK(org), docSK(id))
}

// Filter holds the /documents filters.
type Filter struct {
	MatterID     string `json:"matter_id,omitempty"`
	Folder       string `json:"folder,omitempty"`
	UpdatedSince string `json:"updated_since,omitempty"`
}

// List: matter_id → GSI2, folder → GSI3 (the other as a filter), else GSI1.
func (s *Store) List(ctx context.Context, org string, req store.ListRequest[Filter]) ([]Document, store.StartKey, error) {
	q := store.ListQuery{Index: store.GSI1, PK: store.Collection(org, "DOC"), SKFrom: req.Filter.UpdatedSince, Limit: req.PerPage, After: req.After}
	q.NarrowBy(org, "DOC",
		store.KeyFilter{Index: store.GSI2, Attr: "matter_id", Segment: "MATTER", Value: req.Filter.MatterID},
		store.KeyFilter{Index: store.GSI3, Attr: "folder", Segment: "FOLDER", Value: req.Filter.Folder})
	q.Project = true
	return store.QueryInto[Document](ctx, s.db, q)
}

// Matches reports whether d passes the filters (a batch read by ids).
func (f Filter) Matches(d Document) bool {
	return httpapi.Is(d.MatterID, f.MatterID) && httpapi.Is(d.Folder, f.Folder) && httpapi.Since(d.UpdatedAt, f.UpdatedSince)
}

// ByIDs reads the documents of org with the given ids: one BatchGetItem.
func (s *Store) ByIDs(ctx context.Context, org string, ids []string) ([]Document, error) {
	sks := make([]string, len(ids))
	for i, id := range ids {
		sks[i] = docSK(id)
	}
	return store.BatchReadInto[Document](ctx, s.db, store.OrgPK(org), sks)
}

// A document's name, filename and folder are at most MaxName characters,
// its media type MaxMediaType (RFC 6838: a type and a subtype of at most
// 127 each, and the slash).
const (
	MaxName      = 200
	MaxMediaType = 255
)

// NewDocument describes a register entry the application records.
type NewDocument struct {
	MatterID, Name, Filename, MimeType, Folder string
	SizeBytes                                  int64
}

// Create records a document's metadata on a matter of org, with its
// document.created event (ids only) in the same transaction.
func (s *Store) Create(ctx context.Context, org string, in NewDocument, now time.Time) (Document, error) {
	switch {
	case strings.TrimSpace(in.Name) == "" || strings.TrimSpace(in.Filename) == "":
		return Document{}, errors.New("a document needs a name and a filename")
	case !strings.Contains(in.MimeType, "/"):
		return Document{}, fmt.Errorf("mime type %q is not a type/subtype such as application/pdf", in.MimeType)
	case in.SizeBytes < 0:
		return Document{}, errors.New("size cannot be negative")
	case utf8.RuneCountInString(in.Name) > MaxName || utf8.RuneCountInString(in.Filename) > MaxName || utf8.RuneCountInString(in.Folder) > MaxName:
		return Document{}, fmt.Errorf("a document's name, filename and folder are at most %d characters", MaxName)
	case len(in.MimeType) > MaxMediaType:
		return Document{}, fmt.Errorf("mime type is longer than %d characters", MaxMediaType)
	}
	pk, sk := matter.Key(org, in.MatterID)
	if _, err := store.ReadInto[matter.Matter](ctx, s.db, pk, sk); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return Document{}, fmt.Errorf("no matter %s in organisation %s", in.MatterID, org)
		}
		return Document{}, err
	}
	d := Document{ID: store.NewID(), MatterID: in.MatterID, Name: in.Name, Filename: in.Filename, MimeType: in.MimeType,
		SizeBytes: in.SizeBytes, Folder: in.Folder, CreatedAt: store.FormatTime(now)}
	d.UpdatedAt = d.CreatedAt
	d.SetKeys(org)
	tx := s.db.Tx()
	tx.PutNew(d)
	if err := outbox.Raise(tx, org, outbox.DocumentCreated, "document", map[string]any{"id": d.ID, "matter_id": d.MatterID}, now); err != nil {
		return Document{}, err
	}
	return d, tx.Commit(ctx)
}

// ErrSealed is returned when a document's signing flow is sealed already.
var ErrSealed = errors.New("document: already sealed")

// Seal completes a document's signing flow: the flow, the document's
// signed_at and the document.signed event commit together.
func (s *Store) Seal(ctx context.Context, org, id string, now time.Time) (SigningFlow, error) {
	d, err := s.Get(ctx, org, id)
	if errors.Is(err, store.ErrNotFound) {
		return SigningFlow{}, fmt.Errorf("no document %s in organisation %s", id, org)
	}
	if err != nil {
		return SigningFlow{}, err
	}
	if d.SigningFlowID != "" {
		return SigningFlow{}, fmt.Errorf("%w: signing flow %s sealed it at %s", ErrSealed, d.SigningFlowID, d.SignedAt)
	}
	f := SigningFlow{ID: store.NewID(), DocumentID: d.ID, MatterID: d.MatterID, Status: Sealed, SealedAt: store.FormatTime(now)}
	f.Keys = store.Keys{PK: store.OrgPK(org), SK: "SIGN#" + f.ID, Kind: "signing_flow"}
	prev := d.UpdatedAt
	d.SigningFlowID, d.SignedAt, d.UpdatedAt = f.ID, f.SealedAt, store.NextUpdate(prev, now)
	d.SetKeys(org)
	ev, err := outbox.New(org, outbox.DocumentSigned, "signing_flow",
		map[string]any{"id": f.ID, "status": f.Status, "document_id": d.ID, "matter_id": d.MatterID}, now)
	if err != nil {
		return SigningFlow{}, err
	}
	tx := s.db.Tx()
	tx.PutWhen(d, store.UnchangedSince(prev).And(expression.AttributeNotExists(expression.Name("signing_flow_id"))))
	tx.PutNew(f)
	outbox.Add(tx, ev)
	var failed *store.TxFailed
	if err := tx.Commit(ctx); errors.As(err, &failed) {
		return SigningFlow{}, fmt.Errorf("%w (or it changed meanwhile; try again)", ErrSealed)
	} else if err != nil {
		return SigningFlow{}, err
	}
	return f, nil
}

// Handlers returns the handlers of the documents family.
func Handlers(s *Store) httpapi.Handlers {
	return httpapi.Handlers{
		"documents.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "documents", parseFilter, s.List, s.ByIDs)
		},
		"documents.get": httpapi.GetHandler("id", "document", func(ctx context.Context, org, id string) (Document, error) {
			return store.ReadInto[Document](ctx, s.db, store.OrgPK(org), docSK(id))
		}),
	}
}

func parseFilter(q url.Values) (Filter, error) {
	var f Filter
	var err error
	if f.MatterID, err = httpapi.UUIDParam(q, "matter_id"); err != nil {
		return Filter{}, err
	}
	if f.Folder, err = httpapi.QueryValue(q, "folder"); err != nil {
		return Filter{}, err
	}
	if utf8.RuneCountInString(f.Folder) > MaxName {
		return Filter{}, apperr.Invalidf("folder", "folder is longer than %d characters", MaxName)
	}
	f.UpdatedSince, err = httpapi.SinceParam(q, "updated_since")
	return f, err
}
