package seed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/store"
)

// Fixed ids of the demo organisation and its API client, so that a
// devserver on a persistent store finds them again after a restart.
const (
	DemoOrgID    = "5eed0000-0000-4000-8000-000000000001"
	DemoClientID = "5eed0000-0000-4000-8000-0000000000c1"
)

// Demo ensures the demo organisation, with a little data when it is new, and
// an API client holding every scope; it returns a freshly minted secret of
// that client (earlier ones keep working, as with any rotation).
func Demo(ctx context.Context, db *store.DB, now time.Time) (org string, key auth.Token, err error) {
	keys := auth.NewStore(db, 0)
	_, err = keys.CreateOrg(ctx, DemoOrgID, "Demo Advokatfirma", now)
	switch {
	case err == nil:
		if _, err = Run(ctx, db, DemoOrgID, Options{Matters: 12, EntriesPerMatter: 4, Now: now, EveryStatus: true}); err != nil {
			return "", auth.Token{}, err
		}
	case errors.Is(err, store.ErrConflict):
	default:
		return "", auth.Token{}, err
	}
	_, key, err = keys.CreateKey(ctx, auth.KeyRequest{OrgID: DemoOrgID, ClientID: DemoClientID, Name: "demo",
		Mode: auth.ModeTest, Scopes: auth.Catalogue}, now)
	if errors.Is(err, auth.ErrClientExists) {
		key, err = keys.Rotate(ctx, DemoClientID, now)
	}
	return DemoOrgID, key, err
}

// DemoLine does what LOCAL-CONTRACT.md asks of a local runtime at start:
// when on (SEED_DEMO, default 1), it ensures the demo organisation and
// writes {"demo_org_id","demo_key"} as one line to w.
func DemoLine(ctx context.Context, db *store.DB, w io.Writer, on bool) error {
	if !on {
		return nil
	}
	org, key, err := Demo(ctx, db, time.Now())
	if err != nil {
		return fmt.Errorf("demo seed: %w", err)
	}
	line, _ := json.Marshal(map[string]string{"demo_org_id": org, "demo_key": key.String()})
	_, err = fmt.Fprintln(w, string(line))
	return err
}
