package iam

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestRolesDecideEveryTableCall: calls to the table through the guard, by
// the real SDK against DynamoDB Local, are allowed or refused by the
// caller's role as IAM decides: the action, the table or the index named
// (an index not granted is refused), a transaction's item-level actions,
// and dynamodb:LeadingKeys on writes; refused calls are AWS's
// AccessDeniedException and never reach the table; a key this run did not
// issue is not recognized.
func TestRolesDecideEveryTableCall(t *testing.T) {
	db := storetest.NewDB(t)
	table := "arn:aws:dynamodb:" + stack.Region + ":" + stack.Account + ":table/" + db.Table
	pol := &Policies{Roles: map[string]string{"reader": "readerRole", "counter": "counterRole"}, ByCaller: map[string][]Statement{
		"reader": {{Allow: true, Actions: []string{"dynamodb:GetItem", "dynamodb:Query"}, Resources: []string{table, table + "/index/GSI1"}}},
		"counter": {
			{Allow: true, Actions: []string{"dynamodb:GetItem"}, Resources: []string{table}},
			{Allow: true, Actions: []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, Resources: []string{table},
				conditions: []condition{{op: "ForAllValues:StringLike", key: "dynamodb:LeadingKeys", values: []string{"APICLIENT#*", "CONFIG"}}}},
		},
	}}
	ids := NewIdentities()
	keys := map[string]string{"": "PK", "GSI1": "GSI1PK", "GSI2": "GSI2PK"}
	guard, err := NewDynamoGuard(storetest.Endpoint(t), ids, pol, db.Table, keys)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(guard)
	defer srv.Close()
	client := func(key string) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL),
			Credentials: credentials.NewStaticCredentialsProvider(key, "x", ""), RetryMaxAttempts: 1})
	}
	reader, counter, stranger := client(ids.Issue("reader")), client(ids.Issue("counter")), client("AKIASTRANGER")
	ctx := context.Background()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	key := func(pk string) map[string]ddbtypes.AttributeValue {
		return map[string]ddbtypes.AttributeValue{"PK": s(pk), "SK": s("x")}
	}
	query := func(c *dynamodb.Client, index string) error {
		in := &dynamodb.QueryInput{TableName: aws.String(db.Table), KeyConditionExpression: aws.String("#pk = :pk"),
			ExpressionAttributeNames: map[string]string{"#pk": keys[index]}, ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":pk": s("O#1")}}
		if index != "" {
			in.IndexName = aws.String(index)
		}
		_, err := c.Query(ctx, in)
		return err
	}
	denied := func(err error, action string) bool {
		var ae smithy.APIError
		return errors.As(err, &ae) && ae.ErrorCode() == "AccessDeniedException" && strings.Contains(ae.ErrorMessage(), "is not authorized to perform: "+action+" on resource: "+table)
	}
	for _, c := range []struct {
		name   string
		err    error
		denied string // the action refused; "" allowed
	}{
		{"reader gets", func() error {
			_, err := reader.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table), Key: key("O#1")})
			return err
		}(), ""},
		{"reader queries the table", query(reader, ""), ""},
		{"reader queries GSI1", query(reader, "GSI1"), ""},
		{"reader queries GSI2", query(reader, "GSI2"), "dynamodb:Query"},
		{"reader puts", func() error {
			_, err := reader.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(db.Table), Item: key("O#1")})
			return err
		}(), "dynamodb:PutItem"},
		{"counter counts", func() error {
			_, err := counter.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(db.Table), Key: key("APICLIENT#k"),
				UpdateExpression: aws.String("ADD n :one"), ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}})
			return err
		}(), ""},
		{"counter writes an organisation's item", func() error {
			_, err := counter.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(db.Table), Item: key("O#1")})
			return err
		}(), "dynamodb:PutItem"},
		{"counter's transaction with one item outside its keys", func() error {
			_, err := counter.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{
				{Put: &ddbtypes.Put{TableName: aws.String(db.Table), Item: key("APICLIENT#k2")}},
				{Put: &ddbtypes.Put{TableName: aws.String(db.Table), Item: key("O#2")}},
			}})
			return err
		}(), "dynamodb:PutItem"},
	} {
		if c.denied == "" && c.err != nil {
			t.Errorf("%s: refused: %v", c.name, c.err)
		}
		if c.denied != "" && !denied(c.err, c.denied) {
			t.Errorf("%s: %v, want AccessDeniedException for %s", c.name, c.err, c.denied)
		}
	}
	// Nothing refused reached the table.
	for _, pk := range []string{"O#1", "O#2", "APICLIENT#k2"} {
		out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table), Key: key(pk)})
		if err != nil || out.Item != nil {
			t.Errorf("%s was written: %v %v", pk, out.Item, err)
		}
	}
	_, err = stranger.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table), Key: key("O#1")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnrecognizedClientException" {
		t.Errorf("a key this run did not issue: %v", err)
	}
}

// TestPolicyConditions: the condition operators the stack uses, as IAM
// evaluates them (ForAllValues holds for no values; a single-valued
// operator needs its key), an explicit deny winning over an allow, and
// wildcards in actions and resources.
func TestPolicyConditions(t *testing.T) {
	p := &Policies{ByCaller: map[string][]Statement{"f": {
		{Allow: true, Actions: []string{"sqs:*"}, Resources: []string{"arn:aws:sqs:*:*:jobs-*"}},
		{Allow: false, Actions: []string{"sqs:DeleteMessage"}, Resources: []string{"arn:aws:sqs:*:*:jobs-dlq"}},
		{Allow: true, Actions: []string{"kms:Decrypt"}, Resources: []string{"*"}, conditions: []condition{{op: "StringEquals", key: "kms:ViaService", values: []string{"dynamodb.us-east-1.amazonaws.com"}}}},
		{Allow: true, Actions: []string{"dynamodb:PutItem"}, Resources: []string{"*"}, conditions: []condition{{op: "ForAllValues:StringLike", key: "dynamodb:LeadingKeys", values: []string{"A#*"}}}},
	}}}
	for _, c := range []struct {
		action, resource string
		keys             map[string][]string
		want             bool
	}{
		{"sqs:SendMessage", "arn:aws:sqs:us-east-1:000000000000:jobs-queue", nil, true},
		{"SQS:sendmessage", "arn:aws:sqs:us-east-1:000000000000:jobs-queue", nil, true},
		{"sqs:SendMessage", "arn:aws:sqs:us-east-1:000000000000:other", nil, false},
		{"sqs:DeleteMessage", "arn:aws:sqs:us-east-1:000000000000:jobs-dlq", nil, false},
		{"kms:Decrypt", "arn:aws:kms:us-east-1:000000000000:key/1", map[string][]string{"kms:ViaService": {"dynamodb.us-east-1.amazonaws.com"}}, true},
		{"kms:Decrypt", "arn:aws:kms:us-east-1:000000000000:key/1", nil, false},
		{"dynamodb:PutItem", "t", map[string][]string{"dynamodb:LeadingKeys": {"A#1", "A#2"}}, true},
		{"dynamodb:PutItem", "t", map[string][]string{"dynamodb:LeadingKeys": {"A#1", "B#2"}}, false},
		{"dynamodb:PutItem", "t", nil, true},
		{"dynamodb:GetItem", "t", nil, false},
	} {
		if got := p.Allows("f", c.action, c.resource, c.keys); got != c.want {
			t.Errorf("%s on %s with %v: %v, want %v", c.action, c.resource, c.keys, got, c.want)
		}
	}
	if !p.Allows("operator", "dynamodb:DeleteTable", "*", nil) {
		t.Error("a caller without a role (the operator) was checked")
	}
}
