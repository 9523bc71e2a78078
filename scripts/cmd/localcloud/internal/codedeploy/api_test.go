package codedeploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/codedeploy"
	cdtypes "github.com/aws/aws-sdk-go-v2/service/codedeploy/types"
	"github.com/aws/smithy-go"
)

// TestAPreTrafficHookDecidesBeforeAnyTraffic: a group with a
// BeforeAllowTraffic hook invokes it (with the deployment's id and the
// hook's execution id) before the alias moves; the hook, through the
// SDK's CodeDeploy client, reads the deployment (its group, and its
// AppSpec naming the target version) and puts its status: Succeeded lets
// the traffic shift, Failed fails the deployment with the alias where it
// was, and no status within the (scaled) hour fails it too. A status for
// another execution, or a second one, is refused as CodeDeploy refuses it.
func TestAPreTrafficHookDecidesBeforeAnyTraffic(t *testing.T) {
	shift, _ := ParseConfig("CodeDeployDefault.LambdaAllAtOnce")
	for _, c := range []struct {
		answer, status string
		steps          string
	}{
		{"Succeeded", "Succeeded", "[2+@0]"},
		{"Failed", "Failed", "[]"},
		{"", "Failed", "[]"}, // no status: the hour (scaled to 0.6 s) passes
	} {
		s := &Service{Scale: 6000, AlarmState: func(string) string { return "OK" }}
		srv := httptest.NewServer(API{Application: "releases", Deployment: s.Deployment})
		client := codedeploy.New(codedeploy.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL),
			Credentials: credentials.NewStaticCredentialsProvider("LCLTEST", "x", ""), RetryMaxAttempts: 1})
		var target, group string
		hookErrs := make(chan error, 1)
		s.Invoke = func(ctx context.Context, fn string, event []byte) {
			go func() {
				var ev struct{ DeploymentId, LifecycleEventHookExecutionId string }
				_ = json.Unmarshal(event, &ev)
				d, err := client.GetDeployment(ctx, &codedeploy.GetDeploymentInput{DeploymentId: aws.String(ev.DeploymentId)})
				if err != nil {
					hookErrs <- err
					return
				}
				group = aws.ToString(d.DeploymentInfo.DeploymentGroupName)
				var spec struct {
					Resources []map[string]struct {
						Properties struct{ TargetVersion string }
					}
				}
				_ = json.Unmarshal([]byte(aws.ToString(d.DeploymentInfo.Revision.AppSpecContent.Content)), &spec)
				target = spec.Resources[0]["matters"].Properties.TargetVersion
				if c.answer == "" {
					hookErrs <- nil
					return
				}
				put := func(id string) error {
					_, err := client.PutLifecycleEventHookExecutionStatus(ctx, &codedeploy.PutLifecycleEventHookExecutionStatusInput{DeploymentId: aws.String(ev.DeploymentId),
						LifecycleEventHookExecutionId: aws.String(id), Status: cdtypes.LifecycleEventStatus(c.answer)})
					return err
				}
				var api smithy.APIError
				if err := put("not-this-one"); !errors.As(err, &api) || api.ErrorCode() != "InvalidLifecycleEventHookExecutionIdException" {
					hookErrs <- fmt.Errorf("another execution's status: %v", err)
					return
				}
				if err := put(ev.LifecycleEventHookExecutionId); err != nil {
					hookErrs <- err
					return
				}
				if err := put(ev.LifecycleEventHookExecutionId); !errors.As(err, &api) || api.ErrorCode() != "LifecycleEventAlreadyCompletedException" {
					hookErrs <- fmt.Errorf("a second status: %v", err)
					return
				}
				hookErrs <- nil
			}()
		}
		a := &namedAlias{fakeAlias{primary: "1"}}
		d := s.Deploy(context.Background(), "matters", a, &Group{ID: "mattersrelease", Hook: "releasecheck", AutoRollback: true}, shift, "2")
		<-d.Done()
		if err := <-hookErrs; err != nil {
			t.Errorf("%q: the hook: %v", c.answer, err)
		}
		st, why := d.Status()
		if st != c.status || fmt.Sprint(a.steps) != c.steps || target != "2" || group != "mattersrelease" {
			t.Errorf("%q: %s (%s), steps %v, the hook read version %q of group %q", c.answer, st, why, a.steps, target, group)
		}
		if c.answer == "" && !strings.Contains(why, "within an hour") {
			t.Errorf("no status: %s", why)
		}
		srv.Close()
	}
}

// namedAlias is a fakeAlias with the function's name and ARN, as the
// AppSpec names them.
type namedAlias struct{ fakeAlias }

func (a *namedAlias) Name() string { return "matters" }
func (a *namedAlias) ARN() string {
	return "arn:aws:lambda:eu-west-1:000000000000:function:matters:live"
}
