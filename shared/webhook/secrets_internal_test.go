package webhook

import (
	"context"
	"testing"

	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestV1SecretsStillOpen: a secret sealed before endpoints were bound (v1,
// no associated data; only local data folders hold one) opens for any
// endpoint, so such a folder keeps working until the secret is rotated.
func TestV1SecretsStillOpen(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	ct, err := gcmSeal(key, "whsec_old", "")
	if err != nil {
		t.Fatal(err)
	}
	sealed := localPrefixV1 + b64.EncodeToString(ct)
	if got, err := (LocalBox{Key: key}).Open(context.Background(), sealed, Binding("o", "e")); err != nil || got != "whsec_old" {
		t.Fatalf("v1: %q %v", got, err)
	}
}

// TestBoxRetriesAfterAFailedLoad: the table-keyed box's first load fails
// (its request cancelled); the next call loads the key and seals, and a
// store on the same table opens what it sealed. An error is never kept.
func TestBoxRetriesAfterAFailedLoad(t *testing.T) {
	db := storetest.NewDB(t)
	s := NewStore(db, true)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.box(cancelled); err == nil {
		t.Fatal("a cancelled load gave a box")
	}
	ctx := context.Background()
	box, err := s.box(ctx)
	if err != nil {
		t.Fatalf("the call after a failed load: %v", err)
	}
	sealed, err := box.Seal(ctx, "whsec_x", Binding("o", "e"))
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewStore(db, true).box(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := other.Open(ctx, sealed, Binding("o", "e")); err != nil || got != "whsec_x" {
		t.Fatalf("open in another container: %q %v", got, err)
	}
}
