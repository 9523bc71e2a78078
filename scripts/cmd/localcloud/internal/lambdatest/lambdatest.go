// Package lambdatest runs a test binary as a Lambda bootstrap, for the
// tests of localcloud's packages that need a real function: the Runtime
// API's, the gateway's and the event sources'.
package lambdatest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	awslambda "github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// ReportLine matches a function's REPORT line as localcloud logs it: its
// function, request id and memory size.
var ReportLine = regexp.MustCompile(`^\[([a-z]+)\] REPORT RequestId: ([0-9a-f-]+)\tFunction: ([a-z]+)\tDuration: [0-9.]+ ms\tBilled Duration: \d+ ms\tMemory Size: (\d+) MB`)

// Main runs the tests; run with LOCALCLOUD_TEST_BOOTSTRAP=1 (Function
// starts it so) the test binary is instead a Lambda function on the real
// runtime client (aws-lambda-go), doing what each invocation asks.
func Main(m *testing.M) {
	if os.Getenv("LOCALCLOUD_TEST_BOOTSTRAP") == "1" {
		if d, err := time.ParseDuration(os.Getenv("LOCALCLOUD_TEST_INIT_SLEEP")); err == nil {
			time.Sleep(d) // a slow init
		}
		awslambda.Start(func(ctx context.Context, raw json.RawMessage) (any, error) {
			var in struct {
				Do      string `json:"do"`
				MB      int    `json:"mb"`
				Sleep   string `json:"sleep"`
				RawPath string `json:"rawPath"`
			}
			_ = json.Unmarshal(raw, &in)
			if in.RawPath == "/whoami" { // the invocation's request id, as the API answers it (X-Request-Id)
				lc, _ := lambdacontext.FromContext(ctx)
				return events.APIGatewayV2HTTPResponse{StatusCode: 200, Headers: map[string]string{"X-Request-Id": lc.AwsRequestID}}, nil
			}
			if in.RawPath != "" { // an API Gateway event
				return gatewayAnswer(in.RawPath, raw)
			}
			if bytes.Contains(raw, []byte(`"fail-me"`)) { // a stream batch that fails
				return nil, errors.New("asked to fail")
			}
			if bytes.Contains(raw, []byte(`"aws:sqs"`)) {
				return queueAnswer(raw)
			}
			if d, err := time.ParseDuration(in.Sleep); err == nil {
				time.Sleep(d)
			}
			deadline, _ := ctx.Deadline()
			switch in.Do {
			case "fail":
				return nil, errors.New("asked to fail")
			case "exit":
				os.Exit(3)
			case "alloc": // touch mb megabytes, and hold them a while
				b := make([]byte, in.MB<<20)
				for i := range b {
					b[i] = 1
				}
				time.Sleep(time.Second)
				return map[string]any{"pid": os.Getpid(), "held": len(b)}, nil
			}
			return map[string]any{"pid": os.Getpid(), "deadline_ms": deadline.UnixMilli()}, nil
		})
		return
	}
	os.Exit(m.Run())
}

// Function is a function whose bootstrap is this test binary (its
// TestMain calls Main), and its log.
func Function(t *testing.T, timeout time.Duration, reserved int) (*lambda.Function, *bytes.Buffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncedBuffer
	spec := &stack.Function{ID: "Probe", Name: "probe", Bootstrap: self, MemoryMB: 128, Timeout: timeout, Reserved: reserved}
	f := lambda.New(spec, append(os.Environ(), "LOCALCLOUD_TEST_BOOTSTRAP=1"), "arn:aws:lambda:"+stack.Region+":"+stack.Account+":function:probe",
		10, &lambda.Logger{Name: "probe", W: &lambda.LogWriter{W: &logs}})
	t.Cleanup(f.Stop)
	return f, &logs.b
}

type syncedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncedBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// gatewayAnswer is the test bootstrap's answer to an API Gateway event
// (see TestMain): by path, the event itself, a binary body, an error, or
// nothing for a long while (3 s, or until the test releases it).
func gatewayAnswer(path string, event []byte) (any, error) {
	switch path {
	case "/binary":
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, IsBase64Encoded: true,
			Headers: map[string]string{"Content-Type": "application/octet-stream"}, Body: base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff})}, nil
	case "/fail":
		return nil, errors.New("asked to fail")
	case "/slow":
		time.Sleep(3 * time.Second)
	case "/hold": // until the file ?until= names exists (the test releases it), at most a minute
		var ev events.APIGatewayV2HTTPRequest
		_ = json.Unmarshal(event, &ev)
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(ev.QueryStringParameters["until"]); err == nil {
				break
			}
		}
	case "/plain":
		return map[string]string{"not": "structured"}, nil
	case "/huge":
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: strings.Repeat("x", 7<<20)}, nil
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json", "X-Probe": "yes"},
		Cookies: []string{"a=1; Path=/", "b=2"}, Body: string(event)}, nil
}

// queueAnswer is the test bootstrap's answer to an SQS batch: the
// messages whose body is "bad" are reported failed; "alien" reports an
// identifier that is not in the batch.
func queueAnswer(raw []byte) (any, error) {
	var ev struct {
		Records []struct {
			ID   string `json:"messageId"`
			Body string `json:"body"`
		}
	}
	_ = json.Unmarshal(raw, &ev)
	type item struct {
		ID string `json:"itemIdentifier"`
	}
	failures := []item{}
	var slowest time.Duration
	for _, r := range ev.Records {
		if d, err := time.ParseDuration(strings.TrimPrefix(r.Body, "sleep-")); err == nil && strings.HasPrefix(r.Body, "sleep-") {
			slowest = max(slowest, d) // the batch's records run at once: it takes its slowest
		}
		switch r.Body {
		case "bad":
			failures = append(failures, item{r.ID})
		case "alien":
			failures = append(failures, item{"not-in-this-batch"})
		}
	}
	time.Sleep(slowest)
	return map[string]any{"batchItemFailures": failures}, nil
}
