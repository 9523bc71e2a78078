package sns

import "testing"

// TestCloudWatchMayPublishOnlyWhereThePolicySaysSo: the SSL-only Deny
// alone refuses CloudWatch (SNS's own error), the Allow with this
// account's conditions lets it publish, and another account's alarm is
// refused by the same Allow.
func TestCloudWatchMayPublishOnlyWhereThePolicySaysSo(t *testing.T) {
	arn := "arn:aws:sns:us-east-1:000000000000:alarms"
	deny := map[string]any{"Effect": "Deny", "Principal": "*", "Action": "sns:Publish", "Resource": arn,
		"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}}
	allow := map[string]any{"Effect": "Allow", "Principal": map[string]any{"Service": "cloudwatch.amazonaws.com"}, "Action": "sns:Publish", "Resource": arn,
		"Condition": map[string]any{"StringEquals": map[string]any{"aws:SourceAccount": "000000000000"},
			"ArnLike": map[string]any{"aws:SourceArn": "arn:aws:cloudwatch:us-east-1:000000000000:alarm:*"}}}
	alarm := "arn:aws:cloudwatch:us-east-1:000000000000:alarm:api5xx"
	if ok, why := (&Topic{ARN: arn, Statements: []map[string]any{deny}}).AllowsService("cloudwatch.amazonaws.com", "000000000000", alarm); ok || why == "" {
		t.Errorf("the Deny alone let CloudWatch publish")
	}
	topic := &Topic{ARN: arn, Statements: []map[string]any{deny, allow}}
	if ok, why := topic.AllowsService("cloudwatch.amazonaws.com", "000000000000", alarm); !ok {
		t.Errorf("the Allow did not: %s", why)
	}
	if ok, _ := topic.AllowsService("cloudwatch.amazonaws.com", "111111111111", "arn:aws:cloudwatch:us-east-1:111111111111:alarm:x"); ok {
		t.Error("another account's alarm may publish")
	}
}
