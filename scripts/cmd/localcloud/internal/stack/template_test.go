package stack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnemulatedMappingPropertiesStopLocalcloud: a mapping property
// localcloud does not emulate, or a value of one it does not, is refused
// at start by name; the properties the stack's own mappings use load.
func TestUnemulatedMappingPropertiesStopLocalcloud(t *testing.T) {
	load := func(stream bool, extra map[string]any) error {
		props := map[string]any{"FunctionName": map[string]any{"Ref": "Fn"}, "BatchSize": 10}
		if stream {
			props["EventSourceArn"] = map[string]any{"Fn::GetAtt": []any{"Table", "StreamArn"}}
			props["StartingPosition"] = "LATEST"
		} else {
			props["EventSourceArn"] = map[string]any{"Fn::GetAtt": []any{"Jobs", "Arn"}}
		}
		for k, v := range extra {
			props[k] = v
		}
		tpl := map[string]any{"Resources": map[string]any{
			"Fn":      map[string]any{"Type": "AWS::Lambda::Function", "Properties": map[string]any{"Code": map[string]any{"S3Key": "abc.zip"}}},
			"Jobs":    map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{}},
			"Table":   map[string]any{"Type": "AWS::DynamoDB::Table", "Properties": map[string]any{}},
			"Mapping": map[string]any{"Type": "AWS::Lambda::EventSourceMapping", "Properties": props},
		}}
		raw, _ := json.Marshal(tpl)
		path := filepath.Join(t.TempDir(), "t.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		return err
	}
	for _, ok := range []struct {
		stream bool
		props  map[string]any
	}{
		{true, map[string]any{"BisectBatchOnFunctionError": true, "MaximumRetryAttempts": 3, "MaximumRecordAgeInSeconds": 3600, "ParallelizationFactor": 1,
			"FilterCriteria": map[string]any{"Filters": []any{map[string]any{"Pattern": `{"eventName":["INSERT"]}`}}}, "Tags": []any{}}},
		{false, map[string]any{"FunctionResponseTypes": []any{"ReportBatchItemFailures"}, "ScalingConfig": map[string]any{"MaximumConcurrency": 2}}},
	} {
		if err := load(ok.stream, ok.props); err != nil {
			t.Errorf("%v: %v", ok.props, err)
		}
	}
	for _, c := range []struct {
		stream bool
		props  map[string]any
		named  string
	}{
		{true, map[string]any{"ParallelizationFactor": 4}, "ParallelizationFactor 4"},
		{true, map[string]any{"TumblingWindowInSeconds": 60}, "TumblingWindowInSeconds"},
		{true, map[string]any{"FunctionResponseTypes": []any{"ReportBatchItemFailures"}}, "FunctionResponseTypes"},
		{true, map[string]any{"StartingPosition": "AT_TIMESTAMP", "StartingPositionTimestamp": 1}, "StartingPositionTimestamp"},
		{false, map[string]any{"MaximumRetryAttempts": 2}, "MaximumRetryAttempts"},
		{false, map[string]any{"ScalingConfig": map[string]any{"Other": 1}}, "ScalingConfig.Other"},
		{false, map[string]any{"DocumentDBEventSourceConfig": map[string]any{}}, "DocumentDBEventSourceConfig"},
	} {
		if err := load(c.stream, c.props); err == nil || !strings.Contains(err.Error(), c.named) {
			t.Errorf("%v: %v, want an error naming %s", c.props, err, c.named)
		}
	}
}

// TestTheStagesAccessLogFormatIsRead: the stage's AccessLogSettings.Format
// (a JSON object, as infra writes it) is the gateway's access log format;
// one that is not a JSON object of strings stops localcloud.
func TestTheStagesAccessLogFormatIsRead(t *testing.T) {
	load := func(format string) (*Stack, error) {
		tpl := map[string]any{"Resources": map[string]any{
			"Table": map[string]any{"Type": "AWS::DynamoDB::Table", "Properties": map[string]any{}},
			"Stage": map[string]any{"Type": "AWS::ApiGatewayV2::Stage", "Properties": map[string]any{
				"AccessLogSettings": map[string]any{"DestinationArn": "arn", "Format": format}}},
		}}
		raw, _ := json.Marshal(tpl)
		path := filepath.Join(t.TempDir(), "t.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return Load(path)
	}
	s, err := load(`{"requestId":"$context.requestId","integrationRequestId":"$context.integration.requestId"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.AccessLogFormat) != 2 || s.AccessLogFormat["integrationRequestId"] != "$context.integration.requestId" {
		t.Errorf("the format read: %v", s.AccessLogFormat)
	}
	if _, err := load(`$context.requestId $context.status`); err == nil || !strings.Contains(err.Error(), "access log format") {
		t.Errorf("a format that is not JSON: %v", err)
	}
}
