package apitest

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"

	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/store"
)

// Record is an item that knows its keys and guards (every domain item).
type Record interface {
	SetKeys(org string)
	Guards(org string) []store.Guard
}

// Put writes records of org with their guards, as a create would.
func (e *Env) Put(org string, recs ...Record) {
	e.t.Helper()
	var items []map[string]ddbtypes.AttributeValue
	for _, r := range recs {
		r.SetKeys(org)
		for _, v := range append([]any{r}, anySlice(r.Guards(org))...) {
			m, err := store.Marshal(v)
			if err != nil {
				e.t.Fatal(err)
			}
			items = append(items, m)
		}
	}
	if err := e.DB.BatchPut(context.Background(), items); err != nil {
		e.t.Fatal(err)
	}
}

func anySlice[T any](s []T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

var seq atomic.Int64

// Stamp is a fixed-width timestamp for fixtures.
func Stamp(t time.Time) string { return store.FormatTime(t) }

// Company returns a company fixture with a unique CVR.
func Company(updated time.Time) *party.Company {
	n := seq.Add(1)
	return &party.Company{ID: uuid.NewString(), Name: fmt.Sprintf("Firma %d ApS", n), CVR: fmt.Sprintf("%08d", 10000000+n),
		CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
}

// Person returns a person fixture with a unique e-mail.
func Person(updated time.Time) *party.Person {
	n := seq.Add(1)
	return &party.Person{ID: uuid.NewString(), Name: fmt.Sprintf("Person %d", n), Email: fmt.Sprintf("p%d@example.dk", n),
		CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
}

// ClientOf returns an engagement fixture on a company or a person.
func ClientOf(p any, updated time.Time) *party.Client {
	c := &party.Client{ID: uuid.NewString(), KYCStatus: "pending", CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
	switch v := p.(type) {
	case *party.Company:
		c.Type, c.CompanyID = party.TypeCompany, v.ID
	case *party.Person:
		c.Type, c.PersonID = party.TypePerson, v.ID
	default:
		panic(fmt.Sprintf("ClientOf(%T)", p))
	}
	return c
}

// Matter returns a matter fixture on client.
func Matter(client *party.Client, status string, updated time.Time) *matter.Matter {
	n := seq.Add(1)
	rate := int64(150000)
	return &matter.Matter{ID: uuid.NewString(), ClientID: client.ID, MatterNumber: fmt.Sprintf("SAG-%d", n),
		Title: "Sag", Status: status, HourlyRate: &rate, Currency: "DKK", CreatedAt: Stamp(updated), UpdatedAt: Stamp(updated)}
}
