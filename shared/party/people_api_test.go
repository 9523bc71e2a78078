package party_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
)

// TestCPRIsNeverAccepted: a person's body carrying a CPR, under any
// CPR-named key (nested too) or as a value, is a 422 that says CPR, and
// nothing is created; a phone number is not mistaken for one.
func TestCPRIsNeverAccepted(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	org := e.Org("A")
	key := e.Key(org)
	bodies := []struct{ name, body string }{
		{"a cpr field", `{"name":"A","email":"a@example.dk","cpr":"0101901234"}`},
		{"a CPR field", `{"name":"A","email":"a@example.dk","CPR":"x"}`},
		{"a null cpr_number", `{"name":"A","email":"a@example.dk","cpr_number":null}`},
		{"a cprNr field", `{"name":"A","email":"a@example.dk","cprNr":"x"}`},
		{"a C.P.R. field", `{"name":"A","email":"a@example.dk","C.P.R.":"x"}`},
		{"a personnummer field", `{"name":"A","email":"a@example.dk","personnummer":"x"}`},
		{"a nested Cpr field", `{"name":"A","email":"a@example.dk","identity":{"documents":[{"Cpr":"x"}]}}`},
		{"a CPR as the name", `{"name":"010190-1234","email":"a@example.dk"}`},
		{"a CPR as the phone", `{"name":"A","email":"a@example.dk","phone":"0101901234"}`},
	}
	for i, b := range bodies {
		t.Run(b.name, func(t *testing.T) {
			r := e.For(t).Post("/api/v1/people", key, fmt.Sprintf("cpr-%d", i), b.body)
			if msg, _ := r.Body["message"].(string); r.Status != 422 || !strings.Contains(msg, "CPR") {
				t.Errorf("%s: %d %s", b.body, r.Status, r.Raw)
			}
		})
	}
	if len(e.Items(org)["person"]) != 0 {
		t.Fatal("a person with a CPR was created")
	}
	apitest.MustStatus(t, e.Post("/api/v1/people", key, "ok", `{"name":"A","email":"a@example.dk","phone":"+45 12 34 56 78"}`), 201)
}

// TestConcurrentSameEmailUnderDifferentKeys: two creates of one e-mail
// under two Idempotency-Keys at once: exactly one wins (201), the other
// is a 422 (the e-mail is unique per organisation), ten rounds over.
func TestConcurrentSameEmailUnderDifferentKeys(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{RateLimit: 1000})
	org := e.Org("A")
	key := e.Key(org)
	for round := range 10 {
		t.Run(fmt.Sprintf("round %d", round), func(t *testing.T) {
			email := fmt.Sprintf("race%d@example.dk", round)
			statuses := make(chan int, 2)
			for i := range 2 {
				go func() {
					statuses <- e.For(t).Post("/api/v1/people", key, fmt.Sprintf("r%d-%d", round, i), `{"name":"A","email":"`+email+`"}`).Status
				}()
			}
			a, b := <-statuses, <-statuses
			if !(a == 201 && b == 422 || a == 422 && b == 201) {
				t.Fatalf("round %d: %d and %d", round, a, b)
			}
		})
	}
	if n := len(e.Items(org)["person"]); n != 10 {
		t.Fatalf("%d people", n)
	}
}
