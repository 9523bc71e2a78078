package main

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestWhatEachRoleMayWrite holds every function's role in the template as
// synthesized to a list of what it may write: each write below is sent,
// as that function, through localcloud's guard (IAM's evaluation of the
// role, dynamodb:LeadingKeys, dynamodb:Attributes and ReturnValues
// included) to DynamoDB Local, and the writes allowed must be exactly the
// function's row. A write outside it is AWS's AccessDeniedException here as
// on AWS (the same statements), and never reaches the table. The e2e suite
// on localcloud shows the other side: every route's writes are allowed.
func TestWhatEachRoleMayWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("synthesizes the local stage")
	}
	ctx := context.Background()
	tpl, err := synthesize(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := stack.Load(tpl)
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.NewDB(t)
	pol, err := iam.LoadPolicies(st, &stack.Resolver{Stack: st, Table: db.Table})
	if err != nil {
		t.Fatal(err)
	}
	ids := iam.NewIdentities()
	guard, err := iam.NewDynamoGuard(storetest.Endpoint(t), ids, pol, db.Table, iam.TableKeys(st.Table.Props))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(guard)
	defer srv.Close()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	key := func(pk, sk string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"PK": s(pk), "SK": s(sk)}
	}
	one := map[string]ddbtypes.AttributeValue{":v": &ddbtypes.AttributeValueMemberN{Value: "1"}}
	put := func(pk, sk string) func(*dynamodb.Client) error {
		return func(c *dynamodb.Client) error {
			item := key(pk, sk)
			item["value"] = s("x")
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(db.Table), Item: item})
			return err
		}
	}
	update := func(pk, sk, attr string, rv ddbtypes.ReturnValue) func(*dynamodb.Client) error {
		return func(c *dynamodb.Client) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(db.Table), Key: key(pk, sk),
				UpdateExpression: aws.String("ADD #a :v"), ExpressionAttributeNames: map[string]string{"#a": attr}, ExpressionAttributeValues: one, ReturnValues: rv})
			return err
		}
	}
	del := func(pk, sk string) func(*dynamodb.Client) error {
		return func(c *dynamodb.Client) error {
			_, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(db.Table), Key: key(pk, sk)})
			return err
		}
	}
	const org, endpoint = "O#0000", "O#0000#WH#1111"
	writes := []struct {
		name string
		do   func(*dynamodb.Client) error
	}{
		{"count a request (APICLIENT rl_*)", update("APICLIENT#c", "APICLIENT", "rl_1", ddbtypes.ReturnValueUpdatedNew)},
		{"change an API client (APICLIENT, any other attribute)", update("APICLIENT#c", "APICLIENT", "rate_limit", "")},
		{"count, answered with the whole client (ALL_NEW)", update("APICLIENT#c", "APICLIENT", "rl_2", ddbtypes.ReturnValueAllNew)},
		{"put an API client", put("APICLIENT#c", "APICLIENT")},
		{"put a stage secret (CONFIG)", put("CONFIG", "SECRET#x")},
		{"update a stage secret (CONFIG)", update("CONFIG", "SECRET#x", "probe", "")},
		{"put in an organisation's partition", put(org, "X#1")},
		{"update in an organisation's partition", update(org, "X#1", "n", "")},
		{"delete in an organisation's partition", del(org, "X#1")},
		{"put in an endpoint's partition", put(endpoint, "DLV#1")},
		{"update in an endpoint's partition", update(endpoint, "DLV#1", "n", "")},
		{"delete in an endpoint's partition", del(endpoint, "DLV#1")},
		{"put in a partition of no kind", put("OTHER", "x")},
	}
	count, org3, ep2 := []string{"count a request (APICLIENT rl_*)"}, []string{"put in an organisation's partition", "update in an organisation's partition"}, []string{"put in an endpoint's partition", "update in an endpoint's partition"}
	want := map[string][]string{
		"matters": append(count, org3...), "parties": append(count, org3...), "timeentries": append(count, org3...),
		"invoices": count, "documents": count, "reports": count,
		"webhooks":   append(append(append(count, org3...), "delete in an organisation's partition"), append(ep2, "delete in an endpoint's partition")...),
		"dispatcher": {"update in an organisation's partition", "update in an endpoint's partition"},
		"delivery":   append(org3, ep2...),
		"enrichment": {"put in an organisation's partition"},
		"configseed": {"put a stage secret (CONFIG)"},
		"meta":       nil, "synthetic": nil, "releasecheck": nil,
	}
	var names []string
	for _, fn := range st.Functions {
		names = append(names, fn.Name)
	}
	sort.Strings(names)
	if len(names) != len(want) {
		t.Errorf("the template's functions %v, want a row for each of %d", names, len(want))
	}
	var table strings.Builder
	for _, name := range names {
		c := dynamodb.New(dynamodb.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider(ids.Issue(name), "x", "")})
		var allowed []string
		for _, w := range writes {
			err := w.do(c)
			var ae smithy.APIError
			switch {
			case err == nil:
				allowed = append(allowed, w.name)
			case errors.As(err, &ae) && ae.ErrorCode() == "AccessDeniedException":
			default:
				t.Fatalf("%s: %s: %v", name, w.name, err)
			}
		}
		fmt.Fprintf(&table, "%-12s %s\n", name, strings.Join(allowed, "; "))
		if !slices.Equal(allowed, want[name]) {
			t.Errorf("%s may write:\n  %s\nwant:\n  %s", name, strings.Join(allowed, "\n  "), strings.Join(want[name], "\n  "))
		}
	}
	t.Logf("what each role may write:\n%s", table.String())
}
