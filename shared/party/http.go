package party

import (
	"unicode/utf8"

	"context"
	"net/http"
	"net/url"

	"github.com/practice-api/practice-api/shared/apperr"
	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/store"
)

// Handlers returns the handlers of the parties family (clients, people, companies).
func Handlers(s *Store) httpapi.Handlers {
	return httpapi.Handlers{
		"people.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "people", parsePeopleFilter, s.ListPeople, s.PeopleByIDs)
		},
		"people.get": httpapi.GetHandler("person", "person", func(ctx context.Context, org, id string) (Person, error) {
			return store.ReadInto[Person](ctx, s.db, store.OrgPK(org), personSK(id))
		}),
		"companies.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "companies", parseCompanyFilter, s.ListCompanies, s.CompaniesByIDs)
		},
		"companies.get": httpapi.GetHandler("company", "company", func(ctx context.Context, org, id string) (Company, error) {
			return store.ReadInto[Company](ctx, s.db, store.OrgPK(org), companySK(id))
		}),
		"clients.list": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeList(w, r, "clients", parseClientFilter, s.ListClients, s.ClientsByIDs)
		},
		"clients.get": httpapi.GetHandler("client", "client", func(ctx context.Context, org, id string) (Client, error) {
			return store.ReadInto[Client](ctx, s.db, store.OrgPK(org), clientSK(id))
		}),
		"people.create": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeCreate(w, r, "people", "/people", s.CreatePerson)
		},
		"companies.create": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeCreate(w, r, "companies", "/companies", s.CreateCompany)
		},
		"clients.create": func(w http.ResponseWriter, r *http.Request) {
			httpapi.ServeCreate(w, r, "clients", "/clients", s.CreateClient)
		},
	}
}

func parsePeopleFilter(q url.Values) (PeopleFilter, error) {
	since, err := httpapi.SinceParam(q, "updated_since")
	return PeopleFilter{UpdatedSince: since}, err
}

func parseCompanyFilter(q url.Values) (CompanyFilter, error) {
	since, err := httpapi.SinceParam(q, "updated_since")
	if err != nil {
		return CompanyFilter{}, err
	}
	f := CompanyFilter{UpdatedSince: since}
	raw, err := httpapi.QueryValue(q, "cvr")
	if err != nil {
		return CompanyFilter{}, err
	}
	if utf8.RuneCountInString(raw) > MaxCVRParam {
		return CompanyFilter{}, apperr.Invalidf("cvr", "cvr is longer than %d characters", MaxCVRParam)
	}
	if raw != "" {
		f.CVR = DigitsOnly(raw)
		if f.CVR == "" || len(f.CVR) > 20 {
			return CompanyFilter{}, apperr.Invalidf("cvr", "cvr must contain digits (formatting characters are ignored), e.g. 12345678")
		}
	}
	return f, nil
}

func parseClientFilter(q url.Values) (ClientFilter, error) {
	typ, err := httpapi.EnumParam(q, "type", TypeCompany, TypePerson)
	if err != nil {
		return ClientFilter{}, err
	}
	since, err := httpapi.SinceParam(q, "updated_since")
	return ClientFilter{Type: typ, UpdatedSince: since}, err
}
