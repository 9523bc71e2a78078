// Package sns delivers the template's alarm notifications as SNS does: a
// CloudWatch alarm publishes to its topic only when the topic's policy
// allows the CloudWatch service principal to (with the conditions the
// policy sets: aws:SourceAccount, aws:SourceArn, aws:SecureTransport), and
// the topic hands the message to its subscriptions: an HTTPS endpoint on
// this machine gets SNS's notification document, an e-mail address a log
// line saying what it would receive.
package sns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Topic is an AWS::SNS::Topic, its policy's statements and subscriptions.
type Topic struct {
	ID, ARN    string
	Statements []map[string]any
	Subs       []Subscription
}

// Subscription is an AWS::SNS::Subscription.
type Subscription struct{ Protocol, Endpoint string }

// Load reads the template's topics, policies and subscriptions; resolve
// turns a template value (a Ref, a Fn::Join) into its local value.
func Load(resources map[string]map[string]any, arnOf func(id string) string, resolve func(any) (string, error)) (map[string]*Topic, error) {
	topics := map[string]*Topic{}
	for id, r := range resources {
		if r["Type"] == "AWS::SNS::Topic" {
			topics[id] = &Topic{ID: id, ARN: arnOf(id)}
		}
	}
	for id, r := range resources {
		p, _ := r["Properties"].(map[string]any)
		switch r["Type"] {
		case "AWS::SNS::TopicPolicy":
			doc, _ := p["PolicyDocument"].(map[string]any)
			sts, _ := doc["Statement"].([]any)
			ts, _ := p["Topics"].([]any)
			for _, t := range ts {
				tid := refID(t)
				if topics[tid] == nil {
					return nil, fmt.Errorf("topic policy %s: no topic %v in the template", id, t)
				}
				for _, st := range sts {
					sm, err := resolveAll(st, resolve)
					if err != nil {
						return nil, fmt.Errorf("topic policy %s: %w", id, err)
					}
					topics[tid].Statements = append(topics[tid].Statements, sm.(map[string]any))
				}
			}
		case "AWS::SNS::Subscription":
			t := topics[refID(p["TopicArn"])]
			if t == nil {
				return nil, fmt.Errorf("subscription %s: no topic %v in the template", id, p["TopicArn"])
			}
			ep, err := resolve(p["Endpoint"])
			if err != nil {
				return nil, fmt.Errorf("subscription %s: %w", id, err)
			}
			t.Subs = append(t.Subs, Subscription{Protocol: fmt.Sprint(p["Protocol"]), Endpoint: ep})
		}
	}
	return topics, nil
}

func refID(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["Ref"].(string)
	return s
}

// resolveAll resolves every intrinsic inside a policy statement.
func resolveAll(v any, resolve func(any) (string, error)) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 1 {
			for k := range x {
				if k == "Ref" || strings.HasPrefix(k, "Fn::") {
					return resolve(x)
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			r, err := resolveAll(e, resolve)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, err := resolveAll(e, resolve)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// AllowsService reports whether the topic's policy lets service publish
// on behalf of source (an ARN in account): an explicit Deny wins, and
// without an Allow that matches, SNS refuses (its error: "… is not
// authorized to perform: SNS:Publish on resource …").
// https://docs.aws.amazon.com/sns/latest/dg/sns-access-policy-use-cases.html
func (t *Topic) AllowsService(service, account, source string) (bool, string) {
	ctx := map[string]string{"aws:SourceAccount": account, "aws:SourceArn": source, "aws:SecureTransport": "true"}
	allowed := false
	for _, st := range t.Statements {
		if !principalIs(st["Principal"], service) || !matchAny(st["Action"], "sns:publish", true) || !matchAny(st["Resource"], t.ARN, false) {
			continue
		}
		ok, err := conditions(st["Condition"], ctx)
		if err != nil {
			return false, err.Error()
		}
		if !ok {
			continue
		}
		if st["Effect"] == "Deny" {
			return false, fmt.Sprintf("explicitly denied by %v", st["Sid"])
		}
		allowed = true
	}
	if !allowed {
		return false, fmt.Sprintf("%s is not authorized to perform: SNS:Publish on resource: %s because no resource-based policy allows the SNS:Publish action", service, t.ARN)
	}
	return true, ""
}

func principalIs(p any, service string) bool {
	if p == "*" {
		return true
	}
	m, _ := p.(map[string]any)
	if m["AWS"] == "*" {
		return true
	}
	switch s := m["Service"].(type) {
	case string:
		return s == service
	case []any:
		for _, x := range s {
			if x == service {
				return true
			}
		}
	}
	return false
}

func matchAny(v any, want string, fold bool) bool {
	var list []any
	switch x := v.(type) {
	case string:
		list = []any{x}
	case []any:
		list = x
	}
	for _, e := range list {
		s := fmt.Sprint(e)
		if fold {
			s, want = strings.ToLower(s), strings.ToLower(want)
		}
		if ok, _ := path.Match(s, want); ok || s == "*" {
			return true
		}
	}
	return false
}

// conditions evaluates a statement's Condition block against ctx (the
// operators localcloud knows; another is an error, never a quiet pass).
func conditions(c any, ctx map[string]string) (bool, error) {
	m, _ := c.(map[string]any)
	for op, kv := range m {
		for key, want := range kv.(map[string]any) {
			got, present := ctx[key]
			var vals []string
			switch w := want.(type) {
			case string:
				vals = []string{w}
			case []any:
				for _, x := range w {
					vals = append(vals, fmt.Sprint(x))
				}
			default:
				vals = []string{fmt.Sprint(w)}
			}
			hit := false
			for _, v := range vals {
				switch op {
				case "StringEquals", "ArnEquals", "Bool":
					hit = hit || (present && got == v)
				case "StringLike", "ArnLike":
					ok, _ := path.Match(strings.ReplaceAll(v, "/", "\x00"), strings.ReplaceAll(got, "/", "\x00"))
					hit = hit || (present && ok)
				default:
					return false, fmt.Errorf("condition operator %s is not evaluated by localcloud", op)
				}
			}
			if !hit {
				return false, nil
			}
		}
	}
	return true, nil
}

// Notify delivers an alarm's notification through the topic: HTTPS
// subscriptions on this machine get SNS's notification document (POST,
// x-amz-sns-message-type: Notification), others a log line.
func (t *Topic) Notify(subject, message string) {
	slog.Info("sns notification", "topic", t.ID, "subject", subject, "subscriptions", len(t.Subs))
	for _, s := range t.Subs {
		u, err := url.Parse(s.Endpoint)
		local := err == nil && (u.Hostname() == "localhost" || net.ParseIP(u.Hostname()) != nil && net.ParseIP(u.Hostname()).IsLoopback())
		if (s.Protocol != "https" && s.Protocol != "http") || !local {
			slog.Info("sns delivery (not sent from this machine)", "topic", t.ID, "protocol", s.Protocol, "endpoint", s.Endpoint, "subject", subject)
			continue
		}
		doc, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": uuid.NewString(), "TopicArn": t.ARN,
			"Subject": subject, "Message": message, "Timestamp": time.Now().UTC().Format(time.RFC3339Nano)})
		req, _ := http.NewRequest(http.MethodPost, s.Endpoint, bytes.NewReader(doc))
		req.Header.Set("Content-Type", "text/plain; charset=UTF-8")
		req.Header.Set("x-amz-sns-message-type", "Notification")
		req.Header.Set("x-amz-sns-topic-arn", t.ARN)
		go func() {
			c := &http.Client{Timeout: 15 * time.Second}
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
}
