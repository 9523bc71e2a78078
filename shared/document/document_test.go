package document_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
)

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func TestCreateRefusesBadMetadata(t *testing.T) {
	t.Parallel()
	ok := document.NewDocument{MatterID: "m", Name: "Forlig", Filename: "forlig.pdf", MimeType: "application/pdf", SizeBytes: 10}
	for _, c := range []struct {
		change func(*document.NewDocument)
		says   string
	}{
		{func(d *document.NewDocument) { d.Name = "  " }, "needs a name and a filename"},
		{func(d *document.NewDocument) { d.Filename = "" }, "needs a name and a filename"},
		{func(d *document.NewDocument) { d.MimeType = "pdf" }, "not a type/subtype"},
		{func(d *document.NewDocument) { d.SizeBytes = -1 }, "cannot be negative"},
		{func(d *document.NewDocument) { d.Name = strings.Repeat("å", document.MaxName+1) }, "at most 200 characters"},
		{func(d *document.NewDocument) { d.Folder = strings.Repeat("x", document.MaxName+1) }, "at most 200 characters"},
		{func(d *document.NewDocument) { d.MimeType = "application/" + strings.Repeat("x", 250) }, "longer than 255"},
	} {
		in := ok
		c.change(&in)
		if _, err := document.NewStore(nil).Create(context.Background(), "org", in, t0); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want …%s…", in, err, c.says)
		}
	}
}

// TestConcurrentSealsSealOnce: signing flows completing one document at
// once; one seals it and raises document.signed, the others get ErrSealed.
func TestConcurrentSealsSealOnce(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	m := apitest.Matter(e.Engagement(org, party.KYCPending, t0), matter.Active, t0)
	e.Put(org, m)
	s := document.NewStore(e.DB)
	if _, err := s.Create(context.Background(), org, document.NewDocument{MatterID: "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10", Name: "x", Filename: "x.pdf", MimeType: "application/pdf"}, t0); err == nil ||
		!strings.Contains(err.Error(), "no matter") {
		t.Fatalf("a document on an unknown matter: %v", err)
	}
	d, err := s.Create(context.Background(), org, document.NewDocument{MatterID: m.ID, Name: "Forlig", Filename: "forlig.pdf", MimeType: "application/pdf", Folder: "Kontrakter"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	flows := make([]document.SigningFlow, 6)
	var won []document.SigningFlow
	for _, i := range apitest.Race(t, len(flows), func(i int) (err error) {
		flows[i], err = s.Seal(context.Background(), org, d.ID, time.Now())
		return err
	}, func(err error) bool { return errors.Is(err, document.ErrSealed) }) {
		won = append(won, flows[i])
	}
	got, err := s.Get(context.Background(), org, d.ID)
	if len(won) != 1 || err != nil || got.SigningFlowID != won[0].ID || won[0].Status != document.Sealed || got.SignedAt != won[0].SealedAt {
		t.Fatalf("%d seals won; document %+v %v", len(won), got, err)
	}
	var types []string
	for _, ev := range e.Items(org)["event"] {
		types = append(types, ev["type"].(*ddbtypes.AttributeValueMemberS).Value)
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{"document.created", "document.signed"}) {
		t.Fatalf("events %v, want the document's document.created and one document.signed", types)
	}
}
