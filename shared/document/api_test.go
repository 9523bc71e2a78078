package document_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
)

// TestDocumentReads: GET /documents by matter, folder and updated_since,
// across pages of two; a document is metadata only (no field that could
// carry its bytes, a link or a preview), and each one reads alone.
func TestDocumentReads(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	co, pe := apitest.Company(t0), apitest.Person(t0)
	c1, c2 := apitest.ClientOf(co, t0), apitest.ClientOf(pe, t0)
	m1, m2 := apitest.Matter(c1, matter.Active, t0), apitest.Matter(c2, matter.Active, t0)
	e.Put(org, co, pe, c1, c2, m1, m2)
	docs := document.NewStore(e.DB)
	for i := range 6 {
		m := []string{m1.ID, m2.ID}[i%2]
		if _, err := docs.Create(context.Background(), org, document.NewDocument{MatterID: m, Name: fmt.Sprintf("Bilag %d", i), Filename: fmt.Sprintf("b%d.pdf", i),
			MimeType: "application/pdf", SizeBytes: int64(i), Folder: []string{"Kontrakter", "Notater", "Kontrakter"}[i%3]}, t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for q, n := range map[string]int{"": 6, "matter_id=" + m1.ID: 3, "folder=Kontrakter": 4, "folder=Kontrakter&matter_id=" + m2.ID: 2,
		"updated_since=" + apitest.Stamp(t0.Add(4*time.Hour)): 2, "folder=Ukendt": 0} {
		t.Run("?"+q, func(t *testing.T) {
			if got := e.For(t).Collect("/api/v1/documents?per_page=2&"+q, key); len(got) != n {
				t.Errorf("documents %q: %d, want %d", q, len(got), n)
			}
		})
	}
	// Metadata only: no field could carry bytes, a URL or a preview.
	allowed := []string{"id", "matter_id", "name", "filename", "mime_type", "size_bytes", "folder", "signing_flow_id", "signed_at", "created_at", "updated_at"}
	for _, d := range e.Get("/api/v1/documents", key).Data() {
		for k, v := range d {
			if !slices.Contains(allowed, k) {
				t.Fatalf("document field %s", k)
			}
			if s, ok := v.(string); ok && (strings.Contains(s, "://") || len(s) > 300) {
				t.Fatalf("document field %s looks like content or a link: %q", k, s)
			}
		}
		apitest.MustStatus(t, e.Get("/api/v1/documents/"+d["id"].(string), key), 200)
	}
}
