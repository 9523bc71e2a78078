package tablefaults

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestACallersTableCallsFailAsDynamoDBs: through the faults, by the real
// SDK (its own retries) against DynamoDB Local, a throttled caller's calls
// end in ProvisionedThroughputExceededException and count one
// ThrottledRequests per attempt, a failing caller's in InternalServerError
// and SystemErrors, a slow caller's answer comes late or its caller gives
// up; another caller's calls, and the caller's once the fault is lifted,
// reach the table.
func TestACallersTableCallsFailAsDynamoDBs(t *testing.T) {
	db := storetest.NewDB(t)
	f, err := New(storetest.Endpoint(t), func(r *http.Request) string {
		_, cred, _ := strings.Cut(r.Header.Get("Authorization"), "Credential=")
		who, _, _ := strings.Cut(cred, "/")
		return who
	})
	if err != nil {
		t.Fatal(err)
	}
	f.Metrics = cloudwatch.NewStore()
	srv := httptest.NewServer(f)
	defer srv.Close()
	client := func(key string) *dynamodb.Client {
		return dynamodb.New(dynamodb.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
			Credentials: credentials.NewStaticCredentialsProvider(key, "x", ""), RetryMaxAttempts: 2})
	}
	ctx := context.Background()
	get := func(c *dynamodb.Client, ctx context.Context) error {
		_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(db.Table),
			Key: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "O#1"}, "SK": &ddbtypes.AttributeValueMemberS{Value: "x"}}})
		return err
	}
	code := func(err error) string {
		var api smithy.APIError
		if errors.As(err, &api) {
			return api.ErrorCode()
		}
		return ""
	}
	count := func(name string) float64 {
		v, _ := f.Metrics.Stat(cloudwatch.Metric{Namespace: "AWS/DynamoDB", Name: name, Dims: map[string]string{"TableName": db.Table, "Operation": "GetItem"}},
			"Sum", time.Now().Add(-time.Minute), time.Now().Add(time.Second))
		return v
	}
	matters, parties := client("matters"), client("parties")

	f.Set("matters", Fault{Kind: Throttle})
	if err := get(matters, ctx); code(err) != "ProvisionedThroughputExceededException" {
		t.Errorf("throttled: %v", err)
	}
	if n := count("ThrottledRequests"); n != 2 {
		t.Errorf("ThrottledRequests %v, want 2 (the SDK's two attempts)", n)
	}
	if err := get(parties, ctx); err != nil {
		t.Errorf("another caller: %v", err)
	}

	f.Set("matters", Fault{Kind: Fail})
	if err := get(matters, ctx); code(err) != "InternalServerError" {
		t.Errorf("failing: %v", err)
	}
	if n := count("SystemErrors"); n != 2 {
		t.Errorf("SystemErrors %v, want 2", n)
	}

	f.Set("matters", Fault{Kind: Slow, Delay: 300 * time.Millisecond})
	began := time.Now()
	if err := get(matters, ctx); err != nil || time.Since(began) < 300*time.Millisecond {
		t.Errorf("slow: %v after %v", err, time.Since(began))
	}
	f.Set("matters", Fault{Kind: Slow, Delay: time.Hour})
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := get(matters, short); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a caller that stops waiting: %v", err)
	}

	f.Set("matters", Fault{})
	if err := get(matters, ctx); err != nil {
		t.Errorf("the fault lifted: %v", err)
	}
	if n := count("ThrottledRequests") + count("SystemErrors"); n != 4 {
		t.Errorf("%v metrics after the faults, want the 4 of the refused calls only", n)
	}
}
