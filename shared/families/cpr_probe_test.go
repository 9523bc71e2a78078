package families_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
)

// roundFourSpellings are the CPR forms the fourth probe got accepted.
var roundFourSpellings = []string{
	"0101901234abcdefabcdefabcdefabcdef", "01019012-3400-4000-8000-000000000000", "01.01.1990-1234", "010190ー1234",
}

// TestCPRProbeInputsAreRefusedOrRead: four organisations' clients at once each send the
// the privacy probe's inputs. Every CPR form is refused by field in a body, a
// nine-digit integer that is a CPR without its leading zero in a field that
// is not an amount too, and an hourly rate past 100,000 kr an hour; the
// ordinary texts the old detector refused (a date with one time of day)
// and random idempotency keys create; an array-style query parameter is a
// 422 that names it. Nothing refused is written; everything accepted is.
func TestCPRProbeInputsAreRefusedOrRead(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 100000})
	type tenant struct {
		org, key, matter string
	}
	tenants := make([]tenant, 4)
	for i := range tenants {
		org := e.Org(fmt.Sprintf("T%d", i))
		key := e.Key(org)
		im := apitest.NewImporter(t, e, key)
		client := im.Client("company_id", im.Company(fmt.Sprintf("1122334%d", i)))
		tenants[i] = tenant{org, key, im.Matter(client, "")["id"].(string)}
	}
	var wg sync.WaitGroup
	created := make([]int, len(tenants))
	for i, tn := range tenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			refused := func(what string, r apitest.Response, field, words string) {
				if r.Status != 422 || !strings.Contains(r.Body["message"].(string), words) || (field != "" && r.Body["field"] != field) {
					t.Errorf("tenant %d: %s: %d %s", i, what, r.Status, r.Raw)
				}
			}
			entry := func(extra string) string {
				return fmt.Sprintf(`{"matter_id":%q,"date":"2025-03-01","duration_minutes":30%s}`, tn.matter, extra)
			}
			for n, sp := range roundFourSpellings {
				q, _ := json.Marshal(sp)
				refused("person name "+sp, e.Post("/api/v1/people", tn.key, fmt.Sprintf("p-%d", n), fmt.Sprintf(`{"name":%s,"email":"r4-%d@example.dk"}`, q, n)), "name", "CPR")
				refused("entry description "+sp, e.Post("/api/v1/time-entries", tn.key, fmt.Sprintf("d-%d", n), entry(`,"hourly_rate":1000,"description":`+string(q))), "description", "CPR")
				if n >= 2 { // a key of hex digits is an opaque id, never read (cpr.InKey): it is only stored as an HMAC
					refused("Idempotency-Key "+sp, e.Post("/api/v1/people", tn.key, sp, `{"name":"Anne","email":"key@example.dk"}`), "Idempotency-Key", "CPR")
				}
			}
			// Numbers: a CPR without its leading zero where no amount is,
			// the same as an hourly rate (refused by the rate's range), and
			// a CPR written as a float.
			refused("a nine-digit number", e.Post("/api/v1/people", tn.key, "n-1", `{"name":"Anne","email":"n1@example.dk","ref":101901234}`), "ref", "CPR")
			refused("a float", e.Post("/api/v1/people", tn.key, "n-2", `{"name":"Anne","email":"n2@example.dk","ref":1.501901234e9}`), "ref", "CPR")
			refused("hourly_rate 101901234", e.Post("/api/v1/time-entries", tn.key, "n-3", entry(`,"hourly_rate":101901234`)), "hourly_rate", "at most 100,000.00 DKK")
			// Ordinary: a meeting's date and time; random keys.
			for n, desc := range []string{"Møde 15.03.24 10.30", "15/03/24 10:30", "Møde 15.03.24, 10.30"} {
				r := e.Post("/api/v1/time-entries", tn.key, fmt.Sprintf("ok-%d", n), entry(fmt.Sprintf(`,"hourly_rate":1000,"description":%q`, desc)))
				if r.Status != 201 {
					t.Errorf("tenant %d: %q: %d %s", i, desc, r.Status, r.Raw)
				}
				created[i]++
			}
			for n, key := range []string{"c0906420218f408f", "0101901234abcdefabcdefabcdef0000", "01019012-34ab-4cde-8f00-000000000000"} {
				r := e.Post("/api/v1/time-entries", tn.key, key, entry(fmt.Sprintf(`,"hourly_rate":1000,"description":"key %d"`, n)))
				if r.Status != 201 {
					t.Errorf("tenant %d: Idempotency-Key %s: %d %s", i, key, r.Status, r.Raw)
				}
				created[i]++
			}
			// An array-style parameter names itself; a plain one still works.
			for _, q := range []string{"per_page[]=5", "status[]=active", "filter[status]=active"} {
				name, _, _ := strings.Cut(q, "=")
				refused("?"+q, e.Get("/api/v1/matters?"+q, tn.key), name, "array-style")
			}
			if r := e.Get("/api/v1/matters?per_page=5", tn.key); r.Status != 200 {
				t.Errorf("tenant %d: ?per_page=5: %d", i, r.Status)
			}
		}()
	}
	wg.Wait()
	for i, tn := range tenants {
		items := e.Items(tn.org)
		if len(items["person"]) != 0 || len(items["time_entry"]) != created[i] {
			t.Errorf("tenant %d: %d people (want 0), %d time entries (want %d)", i, len(items["person"]), len(items["time_entry"]), created[i])
		}
	}
}
