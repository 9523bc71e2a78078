package app

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/smoke"
)

// ReleaseCheck is the pre-traffic hook of every function's release
// (CodeDeploy's BeforeAllowTraffic): before any traffic reaches the new
// version, it runs make smoke's read-only checks (package smoke) against
// the stage as it would be with that version, invoking the version itself
// for the paths its family serves and the other functions' live aliases
// for the rest, and a worker's version with an empty batch; then it tells
// CodeDeploy Succeeded or Failed (a failed check stops the release before
// its canary).
// https://docs.aws.amazon.com/codedeploy/latest/userguide/reference-appspec-file-structure-hooks.html#appspec-hooks-lambda
type ReleaseCheck struct {
	CodeDeploy interface {
		GetDeployment(ctx context.Context, in *codedeploy.GetDeploymentInput, opts ...func(*codedeploy.Options)) (*codedeploy.GetDeploymentOutput, error)
		PutLifecycleEventHookExecutionStatus(ctx context.Context, in *codedeploy.PutLifecycleEventHookExecutionStatusInput, opts ...func(*codedeploy.Options)) (*codedeploy.PutLifecycleEventHookExecutionStatusOutput, error)
	}
	Lambda interface {
		Invoke(ctx context.Context, in *awslambda.InvokeInput, opts ...func(*awslambda.Options)) (*awslambda.InvokeOutput, error)
	}
	// Functions maps each function's family (a worker's name) to its
	// physical name; Groups each deployment group's name to the family
	// (or worker) it releases.
	Functions, Groups map[string]string
	// Key is the smoke key's source (nil: the keyed checks are skipped).
	Key func(context.Context) (string, error)
}

// HookEvent is what CodeDeploy invokes a lifecycle hook with.
type HookEvent struct {
	DeploymentID                  string `json:"DeploymentId"`
	LifecycleEventHookExecutionID string `json:"LifecycleEventHookExecutionId"`
}

// Handle checks the deployment's target version and reports to CodeDeploy.
func (h *ReleaseCheck) Handle(ctx context.Context, ev HookEvent) error {
	status, report := cdtypes.LifecycleEventStatusSucceeded, ""
	if err := h.check(ctx, ev.DeploymentID, &report); err != nil {
		status = cdtypes.LifecycleEventStatusFailed
		slog.ErrorContext(ctx, "release check failed", "deployment", ev.DeploymentID, "err", err, "report", report)
	} else {
		slog.InfoContext(ctx, "release check passed", "deployment", ev.DeploymentID, "report", report)
	}
	_, err := h.CodeDeploy.PutLifecycleEventHookExecutionStatus(ctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{
		DeploymentId: aws.String(ev.DeploymentID), LifecycleEventHookExecutionId: aws.String(ev.LifecycleEventHookExecutionID), Status: status})
	return err
}

func (h *ReleaseCheck) check(ctx context.Context, deploymentID string, report *string) error {
	d, err := h.CodeDeploy.GetDeployment(ctx, &codedeploy.GetDeploymentInput{DeploymentId: aws.String(deploymentID)})
	if err != nil {
		return fmt.Errorf("get deployment: %w", err)
	}
	family, ok := h.Groups[aws.ToString(d.DeploymentInfo.DeploymentGroupName)]
	if !ok {
		return fmt.Errorf("deployment group %s is not one of the stage's", aws.ToString(d.DeploymentInfo.DeploymentGroupName))
	}
	target, err := targetVersion(d.DeploymentInfo)
	if err != nil {
		return err
	}
	if _, api := h.Functions[family]; api && routes.Family(family) == nil {
		// A worker: its new version takes an empty batch without an error.
		out, err := h.Lambda.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String(h.Functions[family]), Qualifier: aws.String(target),
			Payload: []byte(`{"Records":[]}`)})
		if err != nil {
			return err
		}
		if out.FunctionError != nil {
			return fmt.Errorf("version %s failed an empty batch: %s", target, out.Payload)
		}
		*report = "an empty batch: ok"
		return nil
	}
	key := ""
	if h.Key != nil {
		if key, err = h.Key(ctx); err != nil {
			return fmt.Errorf("read the smoke key: %w", err)
		}
	}
	var out strings.Builder
	client := &http.Client{Timeout: 15 * time.Second, Transport: &invokeTransport{h: h, family: family, version: target}}
	failed, err := smoke.RunWith(ctx, client, "https://release-check.invalid"+routes.Prefix, key, &out)
	*report = out.String()
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d smoke check(s) failed on version %s", failed, target)
	}
	return nil
}

// targetVersion is the version a Lambda deployment shifts to, from its
// AppSpec (CloudFormation's deployments carry it as AppSpecContent).
func targetVersion(d *cdtypes.DeploymentInfo) (string, error) {
	if d == nil || d.Revision == nil || d.Revision.AppSpecContent == nil {
		return "", fmt.Errorf("the deployment has no AppSpec content")
	}
	var spec struct {
		Resources []map[string]struct {
			Properties struct{ TargetVersion any }
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(d.Revision.AppSpecContent.Content)), &spec); err != nil {
		return "", fmt.Errorf("the deployment's AppSpec: %w", err)
	}
	for _, r := range spec.Resources {
		for _, fn := range r {
			if v := fmt.Sprint(fn.Properties.TargetVersion); fn.Properties.TargetVersion != nil && v != "" {
				return v, nil
			}
		}
	}
	return "", fmt.Errorf("the deployment's AppSpec names no TargetVersion")
}

// invokeTransport sends a request as API Gateway would (a payload 2.0
// event) to the function whose route it matches: the version under
// release for its family's routes, the live alias for the others', meta
// for what matches no route.
type invokeTransport struct {
	h       *ReleaseCheck
	family  string
	version string
}

func (t *invokeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	family, key := routes.Meta, "$default"
	for _, rt := range routes.Table {
		if matchPath(routes.Prefix+rt.Path, r.URL.Path) && rt.Method == r.Method {
			family, key = rt.Family, rt.Pattern()
		}
	}
	qualifier := "live"
	if family == t.family {
		qualifier = t.version
	}
	headers := map[string]string{}
	for k, v := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
	}
	query := map[string]string{}
	for k, v := range r.URL.Query() {
		query[k] = strings.Join(v, ",")
	}
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: key, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery, Headers: headers,
		QueryStringParameters: query, Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{RouteKey: key, Stage: "$default", DomainName: r.URL.Hostname(), TimeEpoch: time.Now().UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: "HTTP/1.1", SourceIP: "127.0.0.1"}}}
	payload, _ := json.Marshal(ev)
	out, err := t.h.Lambda.Invoke(r.Context(), &awslambda.InvokeInput{FunctionName: aws.String(t.h.Functions[family]), Qualifier: aws.String(qualifier), Payload: payload})
	if err != nil {
		return nil, err
	}
	resp := &http.Response{Request: r, Header: http.Header{}, ProtoMajor: 1, ProtoMinor: 1}
	var ans events.APIGatewayV2HTTPResponse
	if out.FunctionError != nil || json.Unmarshal(out.Payload, &ans) != nil || ans.StatusCode == 0 {
		resp.StatusCode, resp.Body = 500, io.NopCloser(strings.NewReader(`{"message":"Internal Server Error"}`)) // as API Gateway answers a failed function
		return resp, nil
	}
	for k, v := range ans.Headers {
		resp.Header.Set(k, v)
	}
	for k, vs := range ans.MultiValueHeaders {
		for _, v := range vs {
			resp.Header.Add(k, v)
		}
	}
	b := []byte(ans.Body)
	if ans.IsBase64Encoded {
		b, _ = base64.StdEncoding.DecodeString(ans.Body)
	}
	resp.StatusCode, resp.Body = ans.StatusCode, io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// matchPath reports whether path matches a route's path pattern.
func matchPath(pattern, path string) bool {
	ps, xs := strings.Split(strings.Trim(pattern, "/"), "/"), strings.Split(strings.Trim(path, "/"), "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if !strings.HasPrefix(ps[i], "{") && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

// StartReleaseCheck serves the release check as a Lambda: RELEASE_FUNCTIONS
// and RELEASE_GROUPS (JSON, set by the stack) say which function and group
// is which.
func StartReleaseCheck() {
	var level slog.LevelVar
	log := JSONLogs(&level)
	h, err := func() (*ReleaseCheck, error) {
		cfg, err := config.FromEnv()
		if err != nil {
			return nil, err
		}
		level.Set(cfg.LogLevel)
		ctx, cancel := context.WithTimeout(context.Background(), StartupTimeout)
		defer cancel()
		awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, err
		}
		rc := &ReleaseCheck{CodeDeploy: codedeploy.NewFromConfig(awsCfg), Lambda: awslambda.NewFromConfig(awsCfg)}
		if err := json.Unmarshal([]byte(os.Getenv("RELEASE_FUNCTIONS")), &rc.Functions); err != nil {
			return nil, fmt.Errorf("RELEASE_FUNCTIONS: %w", err)
		}
		var byFamily map[string]string // the stack says which group releases each family
		if err := json.Unmarshal([]byte(os.Getenv("RELEASE_GROUPS")), &byFamily); err != nil {
			return nil, fmt.Errorf("RELEASE_GROUPS: %w", err)
		}
		rc.Groups = map[string]string{}
		for family, group := range byFamily {
			rc.Groups[group] = family
		}
		if rc.Key, err = SmokeKey(ctx, cfg); err != nil {
			return nil, err
		}
		return rc, nil
	}()
	if err != nil {
		log.Error("cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}
