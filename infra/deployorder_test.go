package main

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The order CloudFormation creates and updates a stack's resources in is
// its dependency graph: a resource waits for every resource it names (Ref,
// Fn::GetAtt, the ${…} of Fn::Sub, in its properties or its UpdatePolicy,
// as cfn-lint's graph reads them too) and every one its DependsOn lists.
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-dependson.html

// deployGraph is a template's dependency graph: each resource and the
// resources it waits for.
type deployGraph map[string]map[string]bool

// newDeployGraph reads the dependencies of every resource of tpl.
func newDeployGraph(tpl map[string]any) deployGraph {
	res := tpl["Resources"].(map[string]any)
	g := deployGraph{}
	for id, r := range res {
		rm := r.(map[string]any)
		deps := map[string]bool{}
		collectRefs(rm["Properties"], res, deps)
		collectRefs(rm["UpdatePolicy"], res, deps)
		switch d := rm["DependsOn"].(type) {
		case string:
			deps[d] = true
		case []any:
			for _, x := range d {
				deps[x.(string)] = true
			}
		}
		delete(deps, id)
		g[id] = deps
	}
	return g
}

var subVar = regexp.MustCompile(`\$\{([A-Za-z0-9]+)(\.[A-Za-z0-9.]+)?\}`)

// collectRefs adds to deps every resource of res that v names.
func collectRefs(v any, res map[string]any, deps map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			switch k {
			case "Ref":
				if s, ok := val.(string); ok && res[s] != nil {
					deps[s] = true
				}
			case "Fn::GetAtt":
				if a, ok := val.([]any); ok && len(a) > 0 {
					if s, ok := a[0].(string); ok && res[s] != nil {
						deps[s] = true
					}
				}
			case "Fn::Sub":
				s, _ := val.(string)
				if a, ok := val.([]any); ok && len(a) > 0 {
					s, _ = a[0].(string)
					collectRefs(a[1:], res, deps)
				}
				for _, m := range subVar.FindAllStringSubmatch(s, -1) {
					if res[m[1]] != nil {
						deps[m[1]] = true
					}
				}
			}
			collectRefs(val, res, deps)
		}
	case []any:
		for _, e := range x {
			collectRefs(e, res, deps)
		}
	}
}

// after reports whether a waits, directly or through others, for b.
func (g deployGraph) after(a, b string) bool {
	seen := map[string]bool{}
	stack := []string{a}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for d := range g[n] {
			if d == b {
				return true
			}
			if !seen[d] {
				seen[d] = true
				stack = append(stack, d)
			}
		}
	}
	return false
}

// order is a creation order CloudFormation could take (each resource after
// all it waits for), or an error naming a cycle's members.
func (g deployGraph) order() ([]string, error) {
	var out []string
	done, busy := map[string]bool{}, map[string]bool{}
	var visit func(n string) error
	visit = func(n string) error {
		if done[n] {
			return nil
		}
		if busy[n] {
			return fmt.Errorf("a cycle through %s", n)
		}
		busy[n] = true
		deps := make([]string, 0, len(g[n]))
		for d := range g[n] {
			deps = append(deps, d)
		}
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		busy[n], done[n] = false, true
		out = append(out, n)
		return nil
	}
	ids := make([]string, 0, len(g))
	for id := range g {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := visit(id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// mustFollow is one "a comes after b" a deploy-time rule asks for, and why.
type mustFollow struct{ a, b, why string }

// deployRule is a check a service makes when CloudFormation creates or
// updates a resource, which fails the deploy when what it names is not
// there yet: the pairs of tpl it applies to (and problems it finds
// directly, such as a name with nothing behind it).
type deployRule struct {
	name, doc string
	pairs     func(tpl map[string]any) (pairs []mustFollow, problems []string)
}

// resourcesOf are tpl's resources of type typ, by logical id.
func resourcesOf(tpl map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tpl["Resources"].(map[string]any) {
		if rm := r.(map[string]any); rm["Type"] == typ {
			out[id] = rm
		}
	}
	return out
}

// refOf is the logical id a {"Ref": id} or {"Fn::GetAtt": [id, …]} names.
func refOf(v any) string {
	m, _ := v.(map[string]any)
	if s, ok := m["Ref"].(string); ok {
		return s
	}
	if a, ok := m["Fn::GetAtt"].([]any); ok && len(a) > 0 {
		s, _ := a[0].(string)
		return s
	}
	return ""
}

// roleOfFunction is the logical id of the execution role of the function
// a reference names (directly, or through its alias or its ARN's parts).
func roleOfFunction(tpl map[string]any, ref any) (fn, role string) {
	res := tpl["Resources"].(map[string]any)
	deps := map[string]bool{}
	collectRefs(ref, res, deps)
	for id := range deps {
		r := res[id].(map[string]any)
		switch r["Type"] {
		case "AWS::Lambda::Alias":
			return roleOfFunction(tpl, r["Properties"].(map[string]any)["FunctionName"])
		case "AWS::Lambda::Function":
			return id, refOf(r["Properties"].(map[string]any)["Role"])
		}
	}
	return "", ""
}

// policiesOfRole are the AWS::IAM::Policy resources attached to role.
func policiesOfRole(tpl map[string]any, role string) []string {
	var out []string
	for id, p := range resourcesOf(tpl, "AWS::IAM::Policy") {
		roles, _ := p["Properties"].(map[string]any)["Roles"].([]any)
		for _, r := range roles {
			if refOf(r) == role {
				out = append(out, id)
			}
		}
	}
	return out
}

// deployRules are the deploy-time rules the services enforce that a
// template's order must respect, each with the AWS page that states it.
var deployRules = []deployRule{
	{
		name: "a stage's route settings need every route they name (API Gateway refuses the stage: NotFoundException, Unable to find Route by key … within the provided RouteSettings)",
		doc:  "https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-throttling.html",
		pairs: func(tpl map[string]any) (out []mustFollow, problems []string) {
			routesByKey := map[string][]string{}
			for id, r := range resourcesOf(tpl, "AWS::ApiGatewayV2::Route") {
				p := r["Properties"].(map[string]any)
				routesByKey[refOf(p["ApiId"])+" "+p["RouteKey"].(string)] = append(routesByKey[refOf(p["ApiId"])+" "+p["RouteKey"].(string)], id)
			}
			for id, s := range resourcesOf(tpl, "AWS::ApiGatewayV2::Stage") {
				p := s["Properties"].(map[string]any)
				settings, _ := p["RouteSettings"].(map[string]any)
				for key := range settings {
					routes := routesByKey[refOf(p["ApiId"])+" "+key]
					if len(routes) == 0 {
						problems = append(problems, fmt.Sprintf("stage %s has settings for %q, a route the template does not have", id, key))
					}
					for _, r := range routes {
						out = append(out, mustFollow{id, r, "its RouteSettings name " + key})
					}
				}
			}
			return out, problems
		},
	},
	{
		name: "an alias needs the version it points at (Lambda: the version must exist)",
		doc:  "https://docs.aws.amazon.com/lambda/latest/dg/configuration-aliases.html",
		pairs: func(tpl map[string]any) (out []mustFollow, _ []string) {
			for id, a := range resourcesOf(tpl, "AWS::Lambda::Alias") {
				p := a["Properties"].(map[string]any)
				if v := refOf(p["FunctionVersion"]); v != "" {
					out = append(out, mustFollow{id, v, "its FunctionVersion"})
				}
				if rc, ok := p["RoutingConfig"].(map[string]any); ok {
					for _, w := range rc["AdditionalVersionWeights"].([]any) {
						if v := refOf(w.(map[string]any)["FunctionVersion"]); v != "" {
							out = append(out, mustFollow{id, v, "its routing config's version"})
						}
					}
				}
			}
			return out, nil
		},
	},
	{
		name: "an event source mapping needs its function's role to allow reading the source (Lambda refuses the mapping: the execution role does not have permissions to call …)",
		doc:  "https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html#events-sqs-permissions",
		pairs: func(tpl map[string]any) (out []mustFollow, problems []string) {
			for id, m := range resourcesOf(tpl, "AWS::Lambda::EventSourceMapping") {
				_, role := roleOfFunction(tpl, m["Properties"].(map[string]any)["FunctionName"])
				if role == "" {
					problems = append(problems, "mapping "+id+": no function of the template behind its FunctionName")
				}
				for _, pol := range policiesOfRole(tpl, role) {
					out = append(out, mustFollow{id, pol, "its function's role policy"})
				}
			}
			return out, problems
		},
	},
	{
		name: "an asynchronous invocation's on-failure destination needs the function's role to allow sending there (Lambda checks the execution role when the configuration is put)",
		doc:  "https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html",
		pairs: func(tpl map[string]any) (out []mustFollow, _ []string) {
			for id, c := range resourcesOf(tpl, "AWS::Lambda::EventInvokeConfig") {
				p := c["Properties"].(map[string]any)
				if _, ok := p["DestinationConfig"]; !ok {
					continue
				}
				_, role := roleOfFunction(tpl, p["FunctionName"])
				for _, pol := range policiesOfRole(tpl, role) {
					out = append(out, mustFollow{id, pol, "its function's role policy"})
				}
			}
			return out, nil
		},
	},
	{
		name: "an alias that CodeDeploy shifts needs its deployment group, the alarms that group watches and its hook functions in place before CloudFormation updates it (the update starts the CodeDeploy deployment)",
		doc:  "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-attribute-updatepolicy.html#cfn-attributes-updatepolicy-codedeploylambdaaliasupdate",
		pairs: func(tpl map[string]any) (out []mustFollow, problems []string) {
			res := tpl["Resources"].(map[string]any)
			for id, a := range resourcesOf(tpl, "AWS::Lambda::Alias") {
				up, _ := a["UpdatePolicy"].(map[string]any)["CodeDeployLambdaAliasUpdate"].(map[string]any)
				if up == nil {
					continue
				}
				group := refOf(up["DeploymentGroupName"])
				if group == "" || res[group] == nil {
					problems = append(problems, "alias "+id+": its UpdatePolicy names no deployment group of the template")
					continue
				}
				out = append(out, mustFollow{id, group, "its UpdatePolicy's deployment group"})
				ac, _ := res[group].(map[string]any)["Properties"].(map[string]any)["AlarmConfiguration"].(map[string]any)
				alarms, _ := ac["Alarms"].([]any)
				for _, al := range alarms {
					if n := refOf(al.(map[string]any)["Name"]); n != "" {
						out = append(out, mustFollow{id, n, "an alarm its deployment group watches"})
					}
				}
				for _, hook := range []string{"BeforeAllowTrafficHook", "AfterAllowTrafficHook"} {
					if h := refOf(up[hook]); h != "" {
						out = append(out, mustFollow{id, h, "its " + hook})
					}
				}
			}
			return out, problems
		},
	},
	{
		name: "a custom domain's API mapping needs the stage it maps (API Gateway: Invalid stage identifier specified)",
		doc:  "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-apigatewayv2-apimapping.html",
		pairs: func(tpl map[string]any) (out []mustFollow, problems []string) {
			stages := resourcesOf(tpl, "AWS::ApiGatewayV2::Stage")
			for id, m := range resourcesOf(tpl, "AWS::ApiGatewayV2::ApiMapping") {
				p := m["Properties"].(map[string]any)
				found := false
				for sid, s := range stages {
					sp := s["Properties"].(map[string]any)
					if refOf(sp["ApiId"]) == refOf(p["ApiId"]) && (refOf(p["Stage"]) == sid || p["Stage"] == sp["StageName"]) {
						out, found = append(out, mustFollow{id, sid, "the stage it maps"}), true
					}
				}
				if !found {
					problems = append(problems, "API mapping "+id+" maps a stage the template does not have")
				}
			}
			return out, problems
		},
	},
	{
		name: "a metric filter and a stage's access log need their log group (CloudWatch Logs: ResourceNotFoundException; API Gateway: the destination must exist)",
		doc:  "https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/aws-resource-logs-metricfilter.html",
		pairs: func(tpl map[string]any) (out []mustFollow, problems []string) {
			groups := resourcesOf(tpl, "AWS::Logs::LogGroup")
			for id, f := range resourcesOf(tpl, "AWS::Logs::MetricFilter") {
				g := refOf(f["Properties"].(map[string]any)["LogGroupName"])
				if groups[g] == nil {
					problems = append(problems, "metric filter "+id+" is on a log group the template does not have")
					continue
				}
				out = append(out, mustFollow{id, g, "its log group"})
			}
			for id, s := range resourcesOf(tpl, "AWS::ApiGatewayV2::Stage") {
				als, _ := s["Properties"].(map[string]any)["AccessLogSettings"].(map[string]any)
				if g := refOf(als["DestinationArn"]); g != "" {
					out = append(out, mustFollow{id, g, "its access log group"})
				}
			}
			return out, problems
		},
	},
}

// TestDeployOrder walks each stage's synthesized template as CloudFormation
// orders it and holds it to every deploy-time rule: a resource a service
// checks for at create or update time is created before the resource that
// needs it. On the template before the fix the stage's route settings
// named 34 routes the stage did not wait for.
func TestDeployOrder(t *testing.T) {
	for _, stage := range []string{"dev", "prod"} {
		checkDeployOrder(t, stage, templates[stage])
	}
}

// checkDeployOrder holds one template to the deploy-time rules.
func checkDeployOrder(t *testing.T, stage string, tpl map[string]any) {
	t.Helper()
	{
		g := newDeployGraph(tpl)
		order, err := g.order()
		if err != nil {
			t.Fatalf("%s: no creation order: %v", stage, err)
		}
		t.Logf("%s: %d resources in creation order, %d dependencies", stage, len(order), countEdges(g))
		for _, rule := range deployRules {
			pairs, problems := rule.pairs(tpl)
			for _, p := range problems {
				t.Errorf("%s: %s (%s): %s", stage, rule.name, rule.doc, p)
			}
			var broken []string
			for _, p := range pairs {
				if !g.after(p.a, p.b) {
					broken = append(broken, fmt.Sprintf("%s does not wait for %s (%s)", p.a, p.b, p.why))
				}
			}
			slices.Sort(broken)
			if len(broken) > 0 {
				t.Errorf("%s: %s (%s): %d of %d broken, for example:\n  %s", stage, rule.name, rule.doc, len(broken), len(pairs),
					strings.Join(broken[:min(len(broken), 3)], "\n  "))
			}
		}
	}
}

func countEdges(g deployGraph) int {
	n := 0
	for _, d := range g {
		n += len(d)
	}
	return n
}

// TestDeployRulesSeeWhatTheyGuard: each rule finds, in the templates, the
// pairs it is about (a rule that matches nothing guards nothing), and the
// graph sees a dependency taken away.
func TestDeployRulesSeeWhatTheyGuard(t *testing.T) {
	tpl := templates["prod"]
	for _, rule := range deployRules {
		pairs, _ := rule.pairs(tpl)
		if len(pairs) == 0 && !strings.Contains(rule.name, "custom domain") {
			t.Errorf("rule %q matches nothing in the prod template", rule.name)
		}
	}
	g := newDeployGraph(tpl)
	for id, s := range resourcesOf(tpl, "AWS::ApiGatewayV2::Stage") {
		delete(g[id], firstRouteOf(tpl))
		for r := range resourcesOf(tpl, "AWS::ApiGatewayV2::Route") {
			delete(g[id], r)
		}
		pairs, _ := deployRules[0].pairs(tpl)
		if len(pairs) == 0 || g.after(pairs[0].a, pairs[0].b) {
			t.Errorf("stage %s still waits for its routes with its DependsOn taken away (%v)", id, s["DependsOn"])
		}
	}
}

func firstRouteOf(tpl map[string]any) string {
	for id := range resourcesOf(tpl, "AWS::ApiGatewayV2::Route") {
		return id
	}
	return ""
}
