package lambda_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambdatest"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// TestInvokeAPIAsLambdasInvoke: the SDK's Lambda client invokes a
// function through localcloud's Invoke by name and by ARN, its alias and
// a published version by qualifier; a function error is the SDK's
// FunctionError with the error document; a version or function that does
// not exist is ResourceNotFoundException; a reserved function with every
// slot busy is TooManyRequestsException.
func TestInvokeAPIAsLambdasInvoke(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 5*time.Second, 1)
	alias := lambda.NewAlias("live", f)
	v2 := alias.Publish(f.Spec.Bootstrap)
	t.Cleanup(alias.Stop)
	srv := httptest.NewServer(lambda.InvokeAPI{Functions: map[string]*lambda.Alias{"probe": alias}})
	defer srv.Close()
	client := awslambda.New(awslambda.Options{Region: stack.Region, BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("LCLTEST", "x", ""), RetryMaxAttempts: 1})
	ctx := context.Background()
	invoke := func(name, qualifier, payload string) (*awslambda.InvokeOutput, error) {
		in := &awslambda.InvokeInput{FunctionName: aws.String(name), Payload: []byte(payload)}
		if qualifier != "" {
			in.Qualifier = aws.String(qualifier)
		}
		return client.Invoke(ctx, in)
	}
	out, err := invoke("probe", "live", `{}`)
	if err != nil || out.FunctionError != nil || aws.ToString(out.ExecutedVersion) != "1" || !strings.Contains(string(out.Payload), "deadline_ms") {
		t.Fatalf("the alias: %v %+v", err, out)
	}
	out, err = invoke(f.ARN(), v2, `{}`)
	if err != nil || aws.ToString(out.ExecutedVersion) != v2 {
		t.Errorf("a version by ARN and qualifier: %v %+v", err, out)
	}
	out, err = invoke("probe", "", `{"do":"fail"}`)
	if err != nil || aws.ToString(out.FunctionError) != "Unhandled" || !strings.Contains(string(out.Payload), "asked to fail") {
		t.Errorf("a function error: %v %+v", err, out)
	}
	var missing *lambdatypes.ResourceNotFoundException
	if _, err := invoke("probe", "9", `{}`); !errors.As(err, &missing) {
		t.Errorf("a version that does not exist: %v", err)
	}
	if _, err := invoke("nobody", "", `{}`); !errors.As(err, &missing) {
		t.Errorf("a function that does not exist: %v", err)
	}
	busy := make(chan error, 1)
	go func() { _, err := invoke("probe", "live", `{"sleep":"1s"}`); busy <- err }()
	time.Sleep(300 * time.Millisecond)
	var throttled *lambdatypes.TooManyRequestsException
	if _, err := invoke("probe", "live", `{}`); !errors.As(err, &throttled) {
		t.Errorf("its one reserved slot busy: %v", err)
	}
	if err := <-busy; err != nil {
		t.Error(err)
	}
}

// TestStreamConsumerPutsIteratorAge: each batch a stream mapping sends
// puts the age of its last record on the alarms' clock (here 60 times the
// wall clock's), per function and per function and alias.
func TestStreamConsumerPutsIteratorAge(t *testing.T) {
	t.Parallel()
	f, _ := lambdatest.Function(t, 5*time.Second, 0)
	f.Metrics = cloudwatch.NewStore()
	c := lambda.StreamConsumer{Alias: lambda.NewAlias("live", f), Scale: 60}
	now := time.Now()
	batch, _ := json.Marshal(map[string]any{"Records": []any{
		map[string]any{"dynamodb": map[string]any{"ApproximateCreationDateTime": float64(now.Add(-20 * time.Second).Unix())}},
		map[string]any{"dynamodb": map[string]any{"ApproximateCreationDateTime": float64(now.Add(-5 * time.Second).Unix())}},
	}})
	if o, _, err := c.Invoke(context.Background(), batch, 0); err != nil || o.Status != "ok" {
		t.Fatal(o, err)
	}
	for _, dims := range []map[string]string{{"FunctionName": "probe"}, {"FunctionName": "probe", "Resource": "probe:live"}} {
		age, ok := f.Metrics.Stat(cloudwatch.Metric{Namespace: "AWS/Lambda", Name: "IteratorAge", Dims: dims}, "Maximum", now.Add(-time.Minute), time.Now().Add(time.Second))
		// The last record: 5 s (6 with the second's truncation and the
		// invocation's start) of wall clock, 300 to 360 s on the alarms'.
		if !ok || age < 300_000 || age > 420_000 {
			t.Errorf("IteratorAge %v (%v) per %v, want the last record's 5 s × 60", age, ok, dims)
		}
	}
}
