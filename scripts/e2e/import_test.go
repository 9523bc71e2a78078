package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func id(t *testing.T, r response, want int) string {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d: %s", r.status, want, r.raw)
	}
	return r.body["data"].(map[string]any)["id"].(string)
}

// TestImportWalkthrough is the README's walk-through: company → client →
// matter → time entry, each under a source-row idempotency key, and the
// entry found again by matter and date range.
func TestImportWalkthrough(t *testing.T) {
	org, key, _ := newOrg(t, "parties:write,clients:write,clients:read,matters:write,matters:read,time:write,time:read")
	run := time.Now().UnixNano() % 100000000
	cvr := fmt.Sprintf("%08d", run)
	co := id(t, post(t, "/companies", key, "crm-42", `{"name":"Nordlys ApS","cvr":"`+cvr+`"}`), 201)
	replay := post(t, "/companies", key, "crm-42", `{"name":"Nordlys ApS","cvr":"`+cvr+`"}`)
	if replay.status != 200 || replay.header.Get("Idempotent-Replayed") != "true" || id(t, replay, 200) != co {
		t.Fatalf("replay: %d %v", replay.status, replay.header)
	}
	cl := id(t, post(t, "/clients", key, "crm-42", `{"company_id":"`+co+`"}`), 201)

	// Active needs approved KYC, which only the application (admin) records.
	if r := post(t, "/matters", key, "case-7", `{"client_id":"`+cl+`","status":"active"}`); r.status != 422 || r.body["field"] != "status" {
		t.Fatalf("active before KYC: %d %s", r.status, r.raw)
	}
	k := mustAdmin(t, "kyc", "set", "--org", org, "--client", cl, "--status", "approved", "--expires", time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339))
	if k["kyc_status"] != "approved" || k["id"] != cl {
		t.Fatalf("kyc set printed %v", k)
	}
	m := post(t, "/matters", key, "case-7", `{"client_id":"`+cl+`","status":"active","hourly_rate":125000,"title":"Lejekontrakt"}`)
	matter := id(t, m, 201)
	if num := m.body["data"].(map[string]any)["matter_number"].(string); !strings.HasPrefix(num, "SAG-") {
		t.Fatalf("matter number %q", num)
	}
	te := post(t, "/time-entries", key, "hours-991", `{"matter_id":"`+matter+`","date":"2025-03-14","duration_minutes":90}`)
	entry := id(t, te, 201)
	if te.body["data"].(map[string]any)["amount"] != 187500.0 {
		t.Fatalf("amount %v", te.body["data"])
	}
	r := get(t, "/time-entries?matter_id="+matter+"&date_from=2025-03-01&date_to=2025-03-31", key)
	data := r.body["data"].([]any)
	if r.status != 200 || len(data) != 1 || data[0].(map[string]any)["id"] != entry {
		t.Fatalf("GET /time-entries: %d %s", r.status, r.raw)
	}
	// The devserver's in-process worker records the enrichment (skipped:
	// the suite runs without a company register).
	if api.local != nil {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c := get(t, "/companies/"+co, key).body["data"].(map[string]any)
			if st := c["enrichment"].(map[string]any)["status"]; st == "skipped" {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("enrichment still %v", st)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
