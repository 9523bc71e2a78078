package families_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/billing"
	"github.com/practice-api/practice-api/shared/document"
	"github.com/practice-api/practice-api/shared/matter"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/seed"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/timeentry"
	"github.com/practice-api/practice-api/shared/webhook"
)

// The floor of this stack: a bare net/http handler that makes the same two
// DynamoDB round trips as the API (a conditional UpdateItem that counts the
// request and returns the client item, then the same Query or GetItem) and
// turns the same items into the same JSON. BenchmarkReadsAgainstTheFloor
// serves both over httptest, alternates requests between them, and reports
// the CPU each takes per request (process CPU: the client side is the same
// for both) and the ratio.

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// floorAuth is the API's authenticate-and-count call, without its checks.
func floorAuth(ctx context.Context, db *store.DB, clientID string) error {
	minute := strconv.FormatInt(time.Now().Unix()/60, 10)
	_, err := db.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(db.Table), Key: store.Key("APICLIENT#"+clientID, "APICLIENT"),
		UpdateExpression:          aws.String("SET #cur = if_not_exists(#cur, :zero) + :one"),
		ConditionExpression:       aws.String("attribute_exists(PK)"),
		ExpressionAttributeNames:  map[string]string{"#cur": "rl_" + minute},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":zero": &ddbtypes.AttributeValueMemberN{Value: "0"}, ":one": &ddbtypes.AttributeValueMemberN{Value: "1"}},
		ReturnValues:              ddbtypes.ReturnValueAllNew,
	})
	return err
}

// floorList lists 100 items of T from a GSI1 collection with the same
// projection as the API's list.
func floorList[T any](db *store.DB, clientID, collection string, omit ...string) http.Handler {
	return floorQuery[T](db, clientID, "GSI1", collection, "", omit...)
}

// floorQuery is floorList on any index ("" for the table), with an
// optional sort-key prefix.
func floorQuery[T any](db *store.DB, clientID, index, pk, skPrefix string, omit ...string) http.Handler {
	keys := []string{"PK", "SK"}
	pkAttr, skAttr := "PK", "SK"
	if index != "" {
		pkAttr, skAttr = index+"PK", index+"SK"
		keys = append(keys, pkAttr, skAttr)
	}
	names := map[string]string{"#pk": pkAttr}
	var proj string
	attrs := slices.DeleteFunc(slices.Clone(store.AttrsOf[T]()), func(a string) bool { return slices.Contains(omit, a) })
	for i, a := range append(keys, attrs...) {
		n := fmt.Sprintf("#p%d", i)
		names[n] = a
		if i > 0 {
			proj += ", "
		}
		proj += n
	}
	in := &dynamodb.QueryInput{TableName: aws.String(db.Table),
		KeyConditionExpression: aws.String("#pk = :pk"), ExpressionAttributeNames: names, ProjectionExpression: aws.String(proj),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: pk}},
		Limit:                     aws.Int32(101)}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	if skPrefix != "" {
		names["#sk"] = skAttr
		in.ExpressionAttributeValues[":skp"] = &ddbtypes.AttributeValueMemberS{Value: skPrefix}
		in.KeyConditionExpression = aws.String("#pk = :pk AND begins_with(#sk, :skp)")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := floorAuth(r.Context(), db, clientID); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out, err := db.Client.Query(r.Context(), in)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var items []T
		if err := attributevalue.UnmarshalListOfMaps(out.Items[:min(100, len(out.Items))], &items); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": items})
	})
}

// floorGet reads one item of T as the API's single read does.
func floorGet[T any](db *store.DB, clientID, pk, sk string) http.Handler {
	names := map[string]string{}
	var proj []string
	for i, a := range store.AttrsOf[T]() {
		names[fmt.Sprintf("#p%d", i)] = a
		proj = append(proj, fmt.Sprintf("#p%d", i))
	}
	in := &dynamodb.GetItemInput{TableName: aws.String(db.Table), Key: store.Key(pk, sk), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String(strings.Join(proj, ", ")), ExpressionAttributeNames: names}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := floorAuth(r.Context(), db, clientID); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out, err := db.Client.GetItem(r.Context(), in)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var v T
		if err := attributevalue.UnmarshalMap(out.Item, &v); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": v})
	})
}

// pair measures the API's url against the floor's, alternating.
func pair(b *testing.B, key, apiURL string, floor http.Handler) {
	fs := httptest.NewServer(floor)
	defer fs.Close()
	do := func(url string, auth bool) time.Duration {
		req, _ := http.NewRequest("GET", url, nil)
		if auth {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		start := cpuNow()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", url, resp.StatusCode)
		}
		return cpuNow() - start
	}
	for range 20 { // warm both: connections, caches
		do(apiURL, true)
		do(fs.URL, false)
	}
	var api, bare time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		api += do(apiURL, true)
		bare += do(fs.URL, false)
		n++
	}
	b.ReportMetric(float64(api.Microseconds())/float64(n), "api-cpu-µs/op")
	b.ReportMetric(float64(bare.Microseconds())/float64(n), "floor-cpu-µs/op")
	b.ReportMetric(float64(api)/float64(bare), "ratio")
}

func BenchmarkReadsAgainstTheFloor(b *testing.B) {
	e := apitest.New(b, apitest.Options{RateLimit: 1 << 30, Bare: true})
	org := e.Org("bench")
	if _, err := seed.Run(context.Background(), e.DB, org, seed.Options{Matters: 220, EntriesPerMatter: 3}); err != nil {
		b.Fatal(err)
	}
	key, clientID := e.KeyWith(apitestKey(org))
	for i := range webhook.MaxEndpoints {
		mustStatusB(b, e.Do("POST", "/api/v1/webhooks", key, strings.NewReader(fmt.Sprintf(`{"url":"https://hooks.example.com/%d","event_types":["matter.created"]}`, i))), 201)
	}
	base := e.Server.URL + "/api/v1"
	first := func(path string) string { return e.Get("/api/v1"+path+"?per_page=1", key).Data()[0]["id"].(string) }
	pk := store.OrgPK(org)
	for _, c := range []struct {
		name, url string
		floor     http.Handler
	}{
		{"list/matters", base + "/matters?per_page=100", floorList[matter.Matter](e.DB, clientID, store.Collection(org, "MATTER"))},
		{"list/clients", base + "/clients?per_page=100", floorList[party.Client](e.DB, clientID, store.Collection(org, "CLIENT"))},
		{"list/people", base + "/people?per_page=100", floorList[party.Person](e.DB, clientID, store.Collection(org, "PERSON"))},
		{"list/companies", base + "/companies?per_page=100", floorList[party.Company](e.DB, clientID, store.Collection(org, "COMPANY"))},
		// All of an organisation's entries are its five status partitions:
		// the floor reads each for a full page, at once, and keeps the first
		// hundred in order (the API reads each for its share, then on).
		{"list/time-entries", base + "/time-entries?per_page=100", floorMerge(e.DB, clientID, timeentry.StatusPKs(org))},
		{"list/time-entries?matter_id", base + "/time-entries?per_page=100&matter_id=" + first("/matters"),
			floorQuery[timeentry.TimeEntry](e.DB, clientID, "", pk, "TE#M#"+first("/matters")+"#")},
		{"list/invoices", base + "/invoices?per_page=100", floorList[billing.Invoice](e.DB, clientID, store.Collection(org, "INV"))},
		{"list/documents", base + "/documents?per_page=100", floorList[document.Document](e.DB, clientID, store.Collection(org, "DOC"))},
		{"list/webhooks (50)", base + "/webhooks?per_page=100", floorQuery[webhook.Endpoint](e.DB, clientID, "", store.OrgPK(org), "WH#", "secret", "previous_secret")},
	} {
		b.Run(c.name, func(b *testing.B) { pair(b, key, c.url, c.floor) })
	}
	for _, c := range []struct {
		name, list, sk string
		floor          func(id string) http.Handler
	}{
		{"get/matter", "/matters", "MATTER#", func(id string) http.Handler { return floorGet[matter.Matter](e.DB, clientID, pk, "MATTER#"+id) }},
		{"get/client", "/clients", "CLIENT#", func(id string) http.Handler { return floorGet[party.Client](e.DB, clientID, pk, "CLIENT#"+id) }},
		{"get/person", "/people", "PERSON#", func(id string) http.Handler { return floorGet[party.Person](e.DB, clientID, pk, "PERSON#"+id) }},
		{"get/company", "/companies", "COMPANY#", func(id string) http.Handler { return floorGet[party.Company](e.DB, clientID, pk, "COMPANY#"+id) }},
		// An invoice and its lines are two items: one consistent Query.
		{"get/invoice", "/invoices", "INV#", func(id string) http.Handler { return floorInvoice(e.DB, clientID, pk, id) }},
		{"get/document", "/documents", "DOC#", func(id string) http.Handler { return floorGet[document.Document](e.DB, clientID, pk, "DOC#"+id) }},
		{"get/webhook", "/webhooks", "WH#", func(id string) http.Handler { return floorGet[webhook.Endpoint](e.DB, clientID, pk, "WH#"+id) }},
	} {
		id := first(c.list)
		b.Run(c.name, func(b *testing.B) { pair(b, key, base+c.list+"/"+id, c.floor(id)) })
	}
}

func apitestKey(org string) auth.KeyRequest { return auth.KeyRequest{OrgID: org} }

// floorMerge reads a page of 100 entries across the status partitions of
// GSI1: each for a full page, at once, then the first hundred in order.
func floorMerge(db *store.DB, clientID string, pks []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := floorAuth(r.Context(), db, clientID); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		pages := make([][]map[string]ddbtypes.AttributeValue, len(pks))
		errs := make([]error, len(pks))
		var wg sync.WaitGroup
		for i, pk := range pks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, err := db.Client.Query(r.Context(), &dynamodb.QueryInput{TableName: aws.String(db.Table), IndexName: aws.String("GSI1"),
					KeyConditionExpression:    aws.String("GSI1PK = :pk"),
					ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: pk}},
					Limit:                     aws.Int32(101)})
				if err == nil {
					pages[i] = out.Items
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		var all []map[string]ddbtypes.AttributeValue
		for i := range pks {
			if errs[i] != nil {
				http.Error(w, errs[i].Error(), 500)
				return
			}
			all = append(all, pages[i]...)
		}
		sk := func(m map[string]ddbtypes.AttributeValue) string {
			return m["GSI1SK"].(*ddbtypes.AttributeValueMemberS).Value
		}
		slices.SortFunc(all, func(a, b map[string]ddbtypes.AttributeValue) int { return strings.Compare(sk(a), sk(b)) })
		var items []timeentry.TimeEntry
		if err := attributevalue.UnmarshalListOfMaps(all[:min(100, len(all))], &items); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": items})
	})
}

// floorInvoice reads an invoice with its lines: one consistent Query of
// its two items.
func floorInvoice(db *store.DB, clientID, pk, id string) http.Handler {
	in := &dynamodb.QueryInput{TableName: aws.String(db.Table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": &ddbtypes.AttributeValueMemberS{Value: pk},
			":sk": &ddbtypes.AttributeValueMemberS{Value: "INV#" + id}}}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := floorAuth(r.Context(), db, clientID); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		out, err := db.Client.Query(r.Context(), in)
		if err != nil || len(out.Items) == 0 {
			http.Error(w, fmt.Sprint(err), 500)
			return
		}
		var v billing.Invoice
		var lines struct {
			Lines []billing.Line `dynamodbav:"lines"`
		}
		_ = attributevalue.UnmarshalMap(out.Items[0], &v)
		if len(out.Items) > 1 {
			_ = attributevalue.UnmarshalMap(out.Items[1], &lines)
		}
		v.Lines = lines.Lines
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"data": v})
	})
}

// floorCreate is the fewest round trips a create needs: authenticate and
// count, then one transaction that binds the Idempotency-Key (conditional
// put) and writes the person (conditional put, its listing index), and the
// person as JSON.
func floorCreate(db *store.DB, clientID, org string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := floorAuth(r.Context(), db, clientID); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var in struct{ Name, Email string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		now := time.Now()
		p := party.Person{ID: store.TimeID(now), Name: in.Name, Email: in.Email, CreatedAt: store.FormatTime(now), UpdatedAt: store.FormatTime(now)}
		p.SetKeys(org)
		item, _ := attributevalue.MarshalMap(p)
		resp, _ := json.Marshal(p)
		idem := map[string]ddbtypes.AttributeValue{
			"PK": &ddbtypes.AttributeValueMemberS{Value: store.OrgPK(org)}, "SK": &ddbtypes.AttributeValueMemberS{Value: "IDEM#people#" + r.Header.Get("Idempotency-Key")},
			"response": &ddbtypes.AttributeValueMemberS{Value: string(resp)},
		}
		_, err := db.Client.TransactWriteItems(r.Context(), &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
			{Put: &ddbtypes.Put{TableName: aws.String(db.Table), Item: item, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
			{Put: &ddbtypes.Put{TableName: aws.String(db.Table), Item: idem, ConditionExpression: aws.String("attribute_not_exists(PK)")}},
		}})
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		_, _ = w.Write(append(append([]byte(`{"data":`), resp...), '}'))
	})
}

// BenchmarkCreateAgainstTheFloor compares POST /people with floorCreate,
// alternating, a fresh e-mail and key per request (CPU per request, ratio).
func BenchmarkCreateAgainstTheFloor(b *testing.B) {
	e := apitest.New(b, apitest.Options{RateLimit: 1 << 30, Bare: true})
	org := e.Org("bench")
	key, clientID := e.KeyWith(apitestKey(org))
	fs := httptest.NewServer(floorCreate(e.DB, clientID, org))
	defer fs.Close()
	n := 0
	do := func(url string, auth bool) time.Duration {
		n++
		req, _ := http.NewRequest("POST", url, strings.NewReader(fmt.Sprintf(`{"name":"Anne Holm","email":"anne%d@example.dk"}`, n)))
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d", n))
		if auth {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		start := cpuNow()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 201 {
			b.Fatalf("%s: %d", url, resp.StatusCode)
		}
		return cpuNow() - start
	}
	api := e.Server.URL + "/api/v1/people"
	for range 20 {
		do(api, true)
		do(fs.URL, false)
	}
	var a, f time.Duration
	runs := 0
	b.ReportAllocs()
	for b.Loop() {
		a += do(api, true)
		f += do(fs.URL, false)
		runs++
	}
	b.ReportMetric(float64(a.Microseconds())/float64(runs), "api-cpu-µs/op")
	b.ReportMetric(float64(f.Microseconds())/float64(runs), "floor-cpu-µs/op")
	b.ReportMetric(float64(a)/float64(f), "ratio")
}
