package main

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestAccessLogCarriesNoRawPath: the gateway's access log (kept a year in
// prod) names the route by its key; no field carries the path or query the
// client sent, where a CPR number may sit. Every field is one of the
// $context variables known to hold none.
func TestAccessLogCarriesNoRawPath(t *testing.T) {
	safe := []string{"$context.requestId", "$context.routeKey", "$context.status", "$context.integrationErrorMessage",
		"$context.integrationStatus", "$context.responseLatency", "$context.integrationLatency", "$context.httpMethod",
		"$context.identity.sourceIp", "$context.requestTimeEpoch", "$context.apiId", "$context.integration.requestId"}
	variable := regexp.MustCompile(`\$context\.[A-Za-z.]+`)
	for _, stage := range []string{"dev", "prod"} {
		stages := resources(stage, "AWS::ApiGatewayV2::Stage")
		if len(stages) != 1 {
			t.Fatalf("%s: %d stages", stage, len(stages))
		}
		for _, st := range stages {
			format := props(st)["AccessLogSettings"].(map[string]any)["Format"].(string)
			var fields map[string]string
			if err := json.Unmarshal([]byte(format), &fields); err != nil {
				t.Fatalf("%s: access log format is not a JSON object of strings: %v", stage, err)
			}
			if fields["routeKey"] != "$context.routeKey" {
				t.Errorf("%s: the access log does not name the route: %v", stage, fields)
			}
			// The function's request id (the X-Request-Id an integrator
			// quotes, on the function's own lines too) joins the two logs.
			if fields["integrationRequestId"] != "$context.integration.requestId" {
				t.Errorf("%s: the access log does not carry the function's request id: %v", stage, fields)
			}
			for name, v := range fields {
				for _, used := range variable.FindAllString(v, -1) {
					if !slices.Contains(safe, used) {
						t.Errorf("%s: access log field %s carries %s, which may hold what the client sent", stage, name, used)
					}
				}
				if lower := strings.ToLower(v); strings.Contains(lower, "path") || strings.Contains(lower, "querystring") {
					t.Errorf("%s: access log field %s = %s", stage, name, v)
				}
			}
		}
	}
}

// TestEachFunctionWritesOnlyItsOwnLogGroup: no function role carries a
// managed policy (AWSLambdaBasicExecutionRole may write any log group of
// the account); each may create streams and put events in its own log
// group and in no other, and the function is configured to log there.
func TestEachFunctionWritesOnlyItsOwnLogGroup(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		all := templates[stage]["Resources"].(map[string]any)
		for id, r := range resources(stage, "AWS::Lambda::Function") {
			role := props(r)["Role"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
			if mp, ok := props(all[role].(map[string]any))["ManagedPolicyArns"]; ok {
				t.Errorf("%s: %s's role has managed policies %v", stage, id, mp)
			}
			group := props(r)["LoggingConfig"].(map[string]any)["LogGroup"].(map[string]any)["Ref"].(string)
			var writes int
			for _, st := range statementsOf(stage, id) {
				acts, _ := json.Marshal(st["Action"])
				if !strings.Contains(string(acts), "logs:") {
					continue
				}
				writes++
				res, _ := json.Marshal(st["Resource"])
				if string(res) != `{"Fn::GetAtt":["`+group+`","Arn"]}` {
					t.Errorf("%s: %s may write logs to %s, want only its group %s", stage, id, res, group)
				}
				if string(acts) != `["logs:CreateLogStream","logs:PutLogEvents"]` {
					t.Errorf("%s: %s's log actions %s", stage, id, acts)
				}
			}
			if writes != 1 {
				t.Errorf("%s: %s has %d log statements, want 1", stage, id, writes)
			}
		}
	}
}

// TestDeliveryOnlyDecryptsSecrets: of the webhook-secrets key, delivery may
// call Decrypt alone (it opens secrets, never seals); the webhooks family
// Decrypt and GenerateDataKey.
func TestDeliveryOnlyDecryptsSecrets(t *testing.T) {
	var secretsKey string
	for id, k := range resources("prod", "AWS::KMS::Key") {
		if strings.Contains(props(k)["Description"].(string), "webhook") {
			secretsKey = id
		}
	}
	want := map[string]string{"delivery": `"kms:Decrypt"`, "webhooks": `["kms:Decrypt","kms:GenerateDataKey"]`}
	for id, name := range functionIDs("prod") {
		for _, st := range statementsOf("prod", id) {
			res, _ := json.Marshal(st["Resource"])
			if !strings.Contains(string(res), secretsKey) {
				continue
			}
			acts, _ := json.Marshal(st["Action"])
			if string(acts) != want[name] {
				t.Errorf("%s: actions on the secrets key %s, want %s", name, acts, want[name])
			}
		}
	}
}
