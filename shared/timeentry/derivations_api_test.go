package timeentry_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/party"
)

// TestTimeEntryDerivations: a time entry's rate is the one sent, else its
// matter's; its amount is the rate times the minutes, half up to whole
// øre; its user is the one sent, else the key's client. No rate anywhere,
// or a closed matter, is a 422 naming the field.
func TestTimeEntryDerivations(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key, clientID := e.KeyWith(auth.KeyRequest{OrgID: org})
	im := apitest.NewImporter(t, e, key)
	cl := im.Client("company_id", im.Company("11111111"))
	withRate := im.Matter(cl, `,"hourly_rate":100000`)["id"].(string)
	noRate := im.Matter(cl, "")["id"].(string)
	user := "0b0f6e3c-4a51-4d1c-9d3e-2f1a8c6b7e10"
	cases := []struct {
		name   string
		body   string
		rate   float64
		amount float64
		user   string
	}{
		{"the matter's rate, the key's client as user", `{"matter_id":"` + withRate + `","date":"2025-01-02","duration_minutes":60}`, 100000, 100000, clientID},
		{"1.5 rounds up", `{"matter_id":"` + withRate + `","date":"2025-01-02","duration_minutes":1,"hourly_rate":90}`, 90, 2, clientID},             // 1.5 → 2
		{"1.48 rounds down, a user sent", `{"matter_id":"` + withRate + `","date":"2025-01-02","duration_minutes":1,"hourly_rate":89}`, 89, 1, user}, // 1.48 → 1
		{"a rate of 0 on a matter with none", `{"matter_id":"` + noRate + `","date":"2025-01-02","duration_minutes":7,"hourly_rate":0}`, 0, 0, user},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if c.user == user {
				body = strings.TrimSuffix(body, "}") + `,"user_id":"` + user + `"}`
			}
			r := e.For(t).Post("/api/v1/time-entries", key, fmt.Sprintf("derive-%d", i), body)
			apitest.MustStatus(t, r, 201)
			te := r.Body["data"].(map[string]any)
			if te["hourly_rate"] != c.rate || te["amount"] != c.amount || te["user_id"] != c.user {
				t.Errorf("case %d: %v", i, te)
			}
		})
	}
	r := e.Post("/api/v1/time-entries", key, "norate", `{"matter_id":"`+noRate+`","date":"2025-01-02","duration_minutes":7}`)
	if r.Status != 422 || r.Body["field"] != "hourly_rate" {
		t.Fatalf("no rate anywhere: %d %s", r.Status, r.Raw)
	}
	closed := apitest.Matter(&party.Client{ID: cl}, "closed", time.Now())
	e.Put(org, closed)
	r = e.Post("/api/v1/time-entries", key, "closed", `{"matter_id":"`+closed.ID+`","date":"2025-01-02","duration_minutes":7,"hourly_rate":1}`)
	if r.Status != 422 || r.Body["field"] != "matter_id" {
		t.Fatalf("time on a closed matter: %d %s", r.Status, r.Raw)
	}
}
