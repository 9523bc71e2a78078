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

// TestAttributeConditionsHoldAPIClients: the counting statement every API
// family's role carries (dynamodb:Attributes PK, SK, rl_*; ReturnValues
// NONE or UPDATED_*), through the guard against DynamoDB Local: a count is
// allowed; an update that names any other attribute (in its update or its
// condition), asks for ALL_NEW or ALL_OLD, or puts the whole item, is
// AWS's AccessDeniedException and changes nothing.
func TestAttributeConditionsHoldAPIClients(t *testing.T) {
	db := storetest.NewDB(t)
	table := "arn:aws:dynamodb:" + stack.Region + ":" + stack.Account + ":table/" + db.Table
	pol := &Policies{Roles: map[string]string{"reader": "readerRole"}, ByCaller: map[string][]Statement{"reader": {
		{Allow: true, Actions: []string{"dynamodb:GetItem"}, Resources: []string{table}},
		{Allow: true, Actions: []string{"dynamodb:UpdateItem"}, Resources: []string{table}, conditions: []condition{
			{op: "ForAllValues:StringLike", key: "dynamodb:LeadingKeys", values: []string{"APICLIENT#*"}},
			{op: "ForAllValues:StringLike", key: "dynamodb:Attributes", values: []string{"PK", "SK", "rl_*"}},
			{op: "StringEqualsIfExists", key: "dynamodb:ReturnValues", values: []string{"NONE", "UPDATED_OLD", "UPDATED_NEW"}},
		}},
	}}}
	ids := NewIdentities()
	guard, err := NewDynamoGuard(storetest.Endpoint(t), ids, pol, db.Table, map[string]string{"": "PK"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(guard)
	defer srv.Close()
	reader := dynamodb.New(dynamodb.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider(ids.Issue("reader"), "x", ""), RetryMaxAttempts: 1})
	ctx := context.Background()
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	key := map[string]ddbtypes.AttributeValue{"PK": s("APICLIENT#c"), "SK": s("APICLIENT")}
	if _, err := db.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(db.Table), Item: map[string]ddbtypes.AttributeValue{
		"PK": s("APICLIENT#c"), "SK": s("APICLIENT"), "scopes": &ddbtypes.AttributeValueMemberSS{Value: []string{"matters:read"}}, "org_id": s("o1")}}); err != nil {
		t.Fatal(err)
	}
	one := map[string]ddbtypes.AttributeValue{":one": &ddbtypes.AttributeValueMemberN{Value: "1"}}
	update := func(expr, cond string, names map[string]string, values map[string]ddbtypes.AttributeValue, rv ddbtypes.ReturnValue) error {
		in := &dynamodb.UpdateItemInput{TableName: aws.String(db.Table), Key: key, UpdateExpression: aws.String(expr),
			ExpressionAttributeNames: names, ExpressionAttributeValues: values, ReturnValues: rv}
		if cond != "" {
			in.ConditionExpression = aws.String(cond)
		}
		_, err := reader.UpdateItem(ctx, in)
		return err
	}
	scopes := map[string]ddbtypes.AttributeValue{":s": &ddbtypes.AttributeValueMemberSS{Value: []string{"webhooks:manage"}}, ":one": one[":one"]}
	for _, c := range []struct {
		name    string
		err     error
		allowed bool
	}{
		{"a count", update("SET #c = if_not_exists(#c, :zero) + :one REMOVE #p", "attribute_exists(PK)", map[string]string{"#c": "rl_2", "#p": "rl_1"},
			map[string]ddbtypes.AttributeValue{":one": one[":one"], ":zero": &ddbtypes.AttributeValueMemberN{Value: "0"}}, ddbtypes.ReturnValueUpdatedNew), true},
		{"a count taken back", update("SET rl_2 = rl_2 - :one", "rl_2 >= :one", nil, one, ""), true},
		{"new scopes", update("SET scopes = :s", "", nil, map[string]ddbtypes.AttributeValue{":s": scopes[":s"]}, ""), false},
		{"new scopes beside a count", update("SET rl_3 = :one, #s = :s", "", map[string]string{"#s": "scopes"}, scopes, ""), false},
		{"a count on a condition of the secrets", update("ADD rl_4 :one", "secrets.#id.h = :one", map[string]string{"#id": "x"}, one, ""), false},
		{"a count answering with the whole client", update("ADD rl_5 :one", "", nil, one, ddbtypes.ReturnValueAllNew), false},
		{"a count answering with the whole client before", update("ADD rl_6 :one", "", nil, one, ddbtypes.ReturnValueAllOld), false},
		{"the whole client put", func() error {
			_, err := reader.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(db.Table), Item: map[string]ddbtypes.AttributeValue{"PK": s("APICLIENT#c"), "SK": s("APICLIENT")}})
			return err
		}(), false},
	} {
		var ae smithy.APIError
		denied := errors.As(c.err, &ae) && ae.ErrorCode() == "AccessDeniedException"
		if c.allowed && c.err != nil || !c.allowed && !denied {
			t.Errorf("%s: %v, want allowed %v", c.name, c.err, c.allowed)
		}
	}
	out, err := db.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := out.Item["scopes"].(*ddbtypes.AttributeValueMemberSS); !ok || len(got.Value) != 1 || got.Value[0] != "matters:read" {
		t.Errorf("scopes changed: %v", out.Item["scopes"])
	}
	for _, a := range []string{"rl_3", "rl_4", "rl_5", "rl_6"} {
		if _, ok := out.Item[a]; ok {
			t.Errorf("a refused update wrote %s", a)
		}
	}
	if n, ok := out.Item["rl_2"].(*ddbtypes.AttributeValueMemberN); !ok || n.Value != "0" {
		t.Errorf("rl_2 = %v, want the count taken back to 0", out.Item["rl_2"])
	}
}

// TestRequestAttributes: the attribute names a request gives IAM are the
// top-level names of its key, item and expressions (placeholders
// resolved), never a value, keyword, function or nested path element.
func TestRequestAttributes(t *testing.T) {
	got := requestAttributes(map[string]any{
		"Key":                      map[string]any{"PK": map[string]any{"S": "a"}, "SK": map[string]any{"S": "b"}},
		"UpdateExpression":         "SET #cur = if_not_exists(#cur, :zero) + :one, list_x[2] = :v REMOVE #prev, a.b.c ADD n :one",
		"ConditionExpression":      "attribute_exists(PK) AND NOT begins_with(#m.#n, :p) AND size(tags) > :z OR x BETWEEN :a AND :b",
		"ExpressionAttributeNames": map[string]any{"#cur": "rl_9", "#prev": "rl_8", "#m": "meta", "#n": "inner"},
	})
	want := []string{"PK", "SK", "a", "list_x", "meta", "n", "rl_8", "rl_9", "tags", "x"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("attributes %v, want %v", got, want)
	}
}
