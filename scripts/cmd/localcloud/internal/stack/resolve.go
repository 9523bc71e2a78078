package stack

import (
	"fmt"
	"strings"
)

// The account and region the local stack pretends to be in.
const (
	Account = "000000000000"
	Region  = "us-east-1"
)

// QueueAddr is where one of the template's queues is served locally.
type QueueAddr struct{ URL, ARN, Name string }

// Resolver turns the template's intrinsic functions into local values.
type Resolver struct {
	Stack     *Stack
	Table     string
	StreamArn string
	Queues    map[string]QueueAddr // by logical id
	// APIEndpoint is the local gateway's origin (http://127.0.0.1:port):
	// what the API's ApiEndpoint attribute names on AWS; APIID its id (the
	// API's Ref).
	APIEndpoint, APIID string
	// VersionOf is the number a version resource of the template stands
	// for now (its Fn::GetAtt Version): the version a running release
	// targets, else the one its alias serves, as CloudFormation's update
	// points it at the version it published (nil: "1").
	VersionOf func(function string) string
	// TopicARN is a topic's ARN (its Ref).
	TopicARN func(id string) (string, bool)
}

func (r *Resolver) FunctionArn(id string) string {
	return "arn:aws:lambda:" + Region + ":" + Account + ":function:" + r.Stack.Functions[id].Name
}

func (r *Resolver) Resolve(v any) (string, error) {
	switch t := v.(type) {
	case string:
		return t, nil
	case float64, bool:
		return fmt.Sprint(t), nil
	case map[string]any:
		if id, ok := t["Ref"].(string); ok {
			return r.ref(id)
		}
		if g, ok := t["Fn::GetAtt"].([]any); ok && len(g) == 2 {
			id, _ := g[0].(string)
			attr, _ := g[1].(string)
			return r.getAtt(id, attr)
		}
		if j, ok := t["Fn::Join"].([]any); ok && len(j) == 2 {
			sep, _ := j[0].(string)
			parts, _ := j[1].([]any)
			var out []string
			for _, p := range parts {
				s, err := r.Resolve(p)
				if err != nil {
					return "", err
				}
				out = append(out, s)
			}
			return strings.Join(out, sep), nil
		}
	}
	return "", fmt.Errorf("cannot resolve %v locally", v)
}

func (r *Resolver) ref(id string) (string, error) {
	switch id {
	case "AWS::Region":
		return Region, nil
	case "AWS::AccountId":
		return Account, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case r.Stack.Table.ID:
		return r.Table, nil
	}
	if q, ok := r.Queues[id]; ok {
		return q.URL, nil
	}
	if f, ok := r.Stack.Functions[id]; ok {
		return f.Name, nil
	}
	if id == r.Stack.API && id != "" && r.APIID != "" {
		return r.APIID, nil
	}
	if r.TopicARN != nil {
		if arn, ok := r.TopicARN(id); ok {
			return arn, nil
		}
	}
	if fn, ok := r.Stack.Versions[id]; ok {
		return r.FunctionArn(fn) + ":" + r.version(fn), nil
	}
	if res := r.Stack.Resources[id]; res != nil && res["Type"] == "AWS::CodeDeploy::DeploymentGroup" {
		return id, nil // its name: localcloud's deployment groups go by their logical id
	}
	return "", fmt.Errorf("the local stack has no resource %s (Ref)", id)
}

func (r *Resolver) getAtt(id, attr string) (string, error) {
	switch {
	case id == r.Stack.Table.ID && attr == "Arn":
		return "arn:aws:dynamodb:" + Region + ":" + Account + ":table/" + r.Table, nil
	case id == r.Stack.Table.ID && attr == "StreamArn":
		return r.StreamArn, nil
	}
	if q, ok := r.Queues[id]; ok {
		switch attr {
		case "Arn":
			return q.ARN, nil
		case "QueueName":
			return q.Name, nil
		case "QueueUrl":
			return q.URL, nil
		}
	}
	if fn, ok := r.Stack.Versions[id]; ok && attr == "Version" {
		return r.version(fn), nil
	}
	if id == r.Stack.API && id != "" && attr == "ApiEndpoint" && r.APIEndpoint != "" {
		return r.APIEndpoint, nil
	}
	if _, ok := r.Stack.Functions[id]; ok && attr == "Arn" {
		return r.FunctionArn(id), nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s: the local stack has no such attribute", id, attr)
}

func (r *Resolver) version(function string) string {
	if r.VersionOf == nil {
		return "1"
	}
	return r.VersionOf(function)
}
