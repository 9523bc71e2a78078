package report_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/timeentry"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// TestReportsAgainstHandComputedValues: each report of a seeded
// organisation against values computed by hand; bad parameters are 422,
// an unknown type 404, another organisation's report its own.
func TestReportsAgainstHandComputedValues(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	co := apitest.Company(t0)
	cl := apitest.ClientOf(co, t0)
	m1, m2 := apitest.Matter(cl, "active", t0), apitest.Matter(cl, "active", t0)
	e.Put(org, co, cl, m1, m2)
	const u1, u2 = "a1111111-1111-4111-8111-111111111111", "b2222222-2222-4222-8222-222222222222"
	for i, x := range []struct {
		user, matter, date string
		status             timeentry.Status
		minutes, rate      int64
	}{
		{u1, m1.ID, "2025-03-01", "draft", 60, 100000},       // 100000
		{u2, m1.ID, "2025-03-05", "approved", 30, 100000},    // 50000
		{u1, m2.ID, "2025-03-10", "invoiced", 90, 80000},     // 120000
		{u1, m2.ID, "2025-04-02", "submitted", 15, 80000},    // 20000, after the range
		{u2, m2.ID, "2025-02-28", "written_off", 45, 100000}, // 75000, before the range
	} {
		e.Put(org, &timeentry.TimeEntry{ID: string(rune('a'+i)) + "0000000-0000-4000-8000-000000000000", MatterID: x.matter, ClientID: cl.ID, UserID: x.user,
			Date: x.date, DurationMinutes: x.minutes, HourlyRate: x.rate, Currency: "DKK", Status: x.status, CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)})
	}
	for i, x := range []struct {
		status billing.Status
		due    string
		total  int64
	}{{"sent", "2025-07-15", 1000}, {"overdue", "2025-06-10", 2000}, {"partially_paid", "2025-05-01", 3000},
		{"sent", "2025-04-15", 4000}, {"overdue", "2025-01-01", 5000}, {"paid", "2025-01-01", 9999}, {"draft", "2025-01-01", 7777}} {
		e.Put(org, &billing.Invoice{ID: string(rune('a'+i)) + "1111111-0000-4000-8000-000000000000", Number: "T" + string(rune('a'+i)), MatterID: m1.ID, ClientID: cl.ID,
			Status: x.status, IssueDate: "2024-12-01", DueDate: x.due, Currency: "DKK", Total: x.total,
			Lines: []billing.Line{{Description: "x", Amount: x.total}}, CreatedAt: apitest.Stamp(t0), UpdatedAt: apitest.Stamp(t0)})
	}
	check := func(path, want string) {
		t.Helper()
		t.Run(path, func(t *testing.T) {
			checkReport(t, e.For(t), path, key, want)
		})
	}
	check("/api/v1/reports/time-summary?date_from=2025-03-01&date_to=2025-03-31", `{
		"type":"time-summary","date_from":"2025-03-01","date_to":"2025-03-31","currency":"DKK",
		"totals":{"entries":3,"minutes":180,"amount":270000},
		"by_status":[{"key":"approved","entries":1,"minutes":30,"amount":50000},{"key":"draft","entries":1,"minutes":60,"amount":100000},{"key":"invoiced","entries":1,"minutes":90,"amount":120000}],
		"by_user":[{"key":"`+u1+`","entries":2,"minutes":150,"amount":220000},{"key":"`+u2+`","entries":1,"minutes":30,"amount":50000}],
		"by_matter":`+byMatter(m1.ID, m2.ID)+`}`)
	check("/api/v1/reports/wip", `{"type":"wip","currency":"DKK","totals":{"entries":3,"minutes":105,"amount":170000},"matters":[
		{"matter_id":"`+m1.ID+`","client_id":"`+cl.ID+`","oldest_date":"2025-03-01","amount_by_status":{"approved":50000,"draft":100000},"entries":2,"minutes":90,"amount":150000},
		{"matter_id":"`+m2.ID+`","client_id":"`+cl.ID+`","oldest_date":"2025-04-02","amount_by_status":{"submitted":20000},"entries":1,"minutes":15,"amount":20000}]}`)
	check("/api/v1/reports/receivables-aging?as_of=2025-06-30", `{"type":"receivables-aging","as_of":"2025-06-30","currency":"DKK","invoices":5,"total":15000,
		"buckets":[{"bucket":"current","invoices":1,"total":1000},{"bucket":"1-30","invoices":1,"total":2000},{"bucket":"31-60","invoices":1,"total":3000},
		{"bucket":"61-90","invoices":1,"total":4000},{"bucket":"90+","invoices":1,"total":5000}]}`)

	for path, status := range map[string]int{
		"/api/v1/reports/profit":                                               404,
		"/api/v1/reports/time-summary":                                         422,
		"/api/v1/reports/time-summary?date_from=2025-01-01":                    422,
		"/api/v1/reports/time-summary?date_from=2024-01-01&date_to=2025-01-01": 422, // 367 days
		"/api/v1/reports/time-summary?date_from=2025-03-02&date_to=2025-03-01": 422,
		"/api/v1/reports/receivables-aging?as_of=tomorrow":                     422,
		"/api/v1/reports/time-summary?date_from=2024-01-02&date_to=2025-01-01": 200, // 366 days
	} {
		t.Run(path, func(t *testing.T) {
			if r := e.For(t).Get(path, key); r.Status != status || r.Body["message"] == nil && status != 200 {
				t.Errorf("%d, want %d: %s", r.Status, status, r.Raw)
			}
		})
	}
	// Another organisation's report is its own, empty one.
	other := e.Key(e.Org("B"))
	r := e.Get("/api/v1/reports/wip", other)
	if r.Body["data"].(map[string]any)["totals"].(map[string]any)["entries"] != 0.0 {
		t.Fatalf("B sees A's time: %s", r.Raw)
	}
}

// byMatter orders the two matters' groups by id, as the report does.
func byMatter(m1, m2 string) string {
	a := `{"key":"` + m1 + `","entries":2,"minutes":90,"amount":150000}`
	b := `{"key":"` + m2 + `","entries":1,"minutes":90,"amount":120000}`
	if m2 < m1 {
		a, b = b, a
	}
	return "[" + a + "," + b + "]"
}

// checkReport compares GET path's data with want as JSON values.
func checkReport(t *testing.T, e *apitest.Env, path, key, want string) {
	t.Helper()
	r := e.Get(path, key)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	var got, exp any
	b, _ := json.Marshal(r.Body["data"])
	_ = json.Unmarshal(b, &got)
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	x, _ := json.Marshal(exp)
	if string(g) != string(x) {
		t.Fatalf("\n got %s\nwant %s", g, x)
	}
}
