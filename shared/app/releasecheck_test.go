package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/app"
)

// fakeRelease is CodeDeploy's side of one deployment, and Lambda's: each
// invocation goes to the API (every family on one server) unless it is
// of a broken version.
type fakeRelease struct {
	base    string
	group   string
	target  string
	broken  map[string]bool // "function:qualifier" that fail
	status  cdtypes.LifecycleEventStatus
	invoked []string
}

func (f *fakeRelease) GetDeployment(context.Context, *codedeploy.GetDeploymentInput, ...func(*codedeploy.Options)) (*codedeploy.GetDeploymentOutput, error) {
	spec := `{"version":0.0,"Resources":[{"fn":{"Type":"AWS::Lambda::Function","Properties":{"Name":"x","Alias":"live","CurrentVersion":"4","TargetVersion":"` + f.target + `"}}}]}`
	return &codedeploy.GetDeploymentOutput{DeploymentInfo: &cdtypes.DeploymentInfo{DeploymentGroupName: aws.String(f.group),
		Revision: &cdtypes.RevisionLocation{RevisionType: cdtypes.RevisionLocationTypeAppSpecContent, AppSpecContent: &cdtypes.AppSpecContent{Content: aws.String(spec)}}}}, nil
}

func (f *fakeRelease) PutLifecycleEventHookExecutionStatus(_ context.Context, in *codedeploy.PutLifecycleEventHookExecutionStatusInput, _ ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error) {
	f.status = in.Status
	return &codedeploy.PutLifecycleEventHookExecutionStatusOutput{}, nil
}

func (f *fakeRelease) Invoke(_ context.Context, in *awslambda.InvokeInput, _ ...func(*awslambda.Options)) (*awslambda.InvokeOutput, error) {
	id := *in.FunctionName + ":" + *in.Qualifier
	f.invoked = append(f.invoked, id)
	if f.broken[id] {
		return &awslambda.InvokeOutput{FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorMessage":"boom"}`)}, nil
	}
	if strings.Contains(string(in.Payload), `"Records"`) {
		return &awslambda.InvokeOutput{Payload: []byte(`{"batchItemFailures":[]}`)}, nil
	}
	var ev events.APIGatewayV2HTTPRequest
	_ = json.Unmarshal(in.Payload, &ev)
	req, _ := http.NewRequest(ev.RequestContext.HTTP.Method, f.base+ev.RawPath+"?"+ev.RawQueryString, nil)
	for k, v := range ev.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h := map[string]string{}
	for k := range resp.Header {
		h[k] = resp.Header.Get(k)
	}
	out, _ := json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: resp.StatusCode, Headers: h, Body: string(b)})
	return &awslambda.InvokeOutput{Payload: out}, nil
}

// TestReleaseCheckRunsTheSmokeChecksOnTheNewVersion: the pre-traffic hook
// of a matters release runs the smoke checks with the matters paths
// invoked on the new version (and the others on the live aliases), and
// tells CodeDeploy Succeeded; a new version that fails them, Failed; a
// worker's version takes an empty batch.
func TestReleaseCheckRunsTheSmokeChecksOnTheNewVersion(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	key := e.Key(e.Org("A"), "matters:read")
	f := &fakeRelease{base: e.Server.URL, group: "g-matters", target: "5", broken: map[string]bool{}}
	h := &app.ReleaseCheck{CodeDeploy: f, Lambda: f, Functions: map[string]string{"matters": "fn-matters", "meta": "fn-meta", "dispatcher": "fn-dispatcher"},
		Groups: map[string]string{"g-matters": "matters", "g-dispatcher": "dispatcher"}, Key: func(context.Context) (string, error) { return key, nil }}
	if err := h.Handle(context.Background(), app.HookEvent{DeploymentID: "d-1", LifecycleEventHookExecutionID: "x"}); err != nil || f.status != cdtypes.LifecycleEventStatusSucceeded {
		t.Fatalf("a good version: %v %s", err, f.status)
	}
	joined := strings.Join(f.invoked, " ")
	if !strings.Contains(joined, "fn-matters:5") || !strings.Contains(joined, "fn-meta:live") || strings.Contains(joined, "fn-matters:live") {
		t.Fatalf("invoked %v", f.invoked)
	}
	f.broken["fn-matters:5"], f.invoked = true, nil
	if err := h.Handle(context.Background(), app.HookEvent{DeploymentID: "d-2", LifecycleEventHookExecutionID: "y"}); err != nil || f.status != cdtypes.LifecycleEventStatusFailed {
		t.Fatalf("a broken version: %v %s", err, f.status)
	}
	f.group, f.target = "g-dispatcher", "9"
	if err := h.Handle(context.Background(), app.HookEvent{DeploymentID: "d-3"}); err != nil || f.status != cdtypes.LifecycleEventStatusSucceeded ||
		f.invoked[len(f.invoked)-1] != "fn-dispatcher:9" {
		t.Fatalf("a worker: %v %s %v", err, f.status, f.invoked)
	}
	f.broken["fn-dispatcher:9"] = true
	if _ = h.Handle(context.Background(), app.HookEvent{DeploymentID: "d-4"}); f.status != cdtypes.LifecycleEventStatusFailed {
		t.Fatalf("a worker that fails an empty batch: %s", f.status)
	}
}
