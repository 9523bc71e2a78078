// Package iam checks each function's calls against its role in the
// template: access key ids issued per caller, policies evaluated as IAM
// does (actions, resources, conditions), and a guard in front of DynamoDB
// that refuses what the caller's role does not allow.
package iam

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// IAM, as far as the service's calls go: each function process signs its
// calls with an access key id of its own (issued this run), so the caller
// of every store and queue call is known, and the call is checked against
// that function's role in the template (actions, resources with index
// ARNs, and the conditions the stack uses) before it is served. What AWS
// refuses is refused here, in AWS's shape (AccessDeniedException).

// Identities are the access key ids issued this run, and who holds each.
type Identities struct {
	mu    sync.Mutex
	byKey map[string]string
}

func NewIdentities() *Identities { return &Identities{byKey: map[string]string{}} }

// Issue gives a caller (a function by name, or "operator") a new key id.
func (ids *Identities) Issue(caller string) string {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	id := "LCL" + rand.Text()[:17] // base32: upper-case letters and digits, as AWS key ids
	ids.byKey[id] = caller
	return id
}

// Of is who signed r (SigV4's Credential=<access key id>/…), or the error
// code and message AWS answers a request signed with no key or a key it
// does not know.
func (ids *Identities) Of(r *http.Request) (string, string, string) {
	_, cred, ok := strings.Cut(r.Header.Get("Authorization"), "Credential=")
	if !ok {
		return "", "MissingAuthenticationToken", "Request is missing Authentication Token"
	}
	id, _, _ := strings.Cut(cred, "/")
	ids.mu.Lock()
	who, known := ids.byKey[id]
	ids.mu.Unlock()
	if !known {
		return "", "InvalidClientTokenId", "The security token included in the request is invalid."
	}
	return who, "", ""
}

// Statement is one policy statement, its resources resolved.
type Statement struct {
	Allow      bool
	Actions    []string
	Resources  []string
	conditions []condition
}

type condition struct {
	op, key string
	values  []string
}

// Policies are each function's statements, by function name. A caller
// without an entry (the operator) is not checked.
type Policies struct {
	ByCaller map[string][]Statement
	Roles    map[string]string // function name -> its role's logical id, for messages
}

// supportedConditions are the condition operators evaluated; a statement
// with another stops localcloud at start.
var supportedConditions = []string{"StringEquals", "StringLike", "ForAllValues:StringLike", "ForAnyValue:StringLike", "ForAllValues:StringEquals", "StringEqualsIfExists"}

// LoadPolicies resolves each function's role statements.
func LoadPolicies(st *stack.Stack, res *stack.Resolver) (*Policies, error) {
	p := &Policies{ByCaller: map[string][]Statement{}, Roles: map[string]string{}}
	for _, fn := range st.Functions {
		p.Roles[fn.Name] = fn.Role
		if m := st.ManagedPolicies[fn.Role]; len(m) > 0 {
			return nil, fmt.Errorf("role %s of function %s: managed policies (%v) are not emulated: localcloud cannot know what they allow", fn.Role, fn.Name, m)
		}
		stmts := []Statement{}
		for _, raw := range st.RoleStatements[fn.Role] {
			m, _ := raw.(map[string]any)
			for _, k := range []string{"NotAction", "NotResource", "NotPrincipal"} {
				if _, ok := m[k]; ok {
					return nil, fmt.Errorf("role %s: %s is not emulated", fn.Role, k)
				}
			}
			s := Statement{Allow: m["Effect"] == "Allow"}
			for _, a := range listOf(m["Action"]) {
				as, _ := a.(string)
				s.Actions = append(s.Actions, as)
			}
			for _, r := range listOf(m["Resource"]) {
				v, err := res.Resolve(r)
				if err != nil { // a resource localcloud does not have (a log group): no call here reaches it
					v = fmt.Sprintf("unresolved:%v", r)
				}
				s.Resources = append(s.Resources, v)
			}
			conds, _ := m["Condition"].(map[string]any)
			for op, kv := range conds {
				if !slices.Contains(supportedConditions, op) {
					return nil, fmt.Errorf("role %s: the condition operator %s is not emulated", fn.Role, op)
				}
				for key, vals := range kv.(map[string]any) {
					c := condition{op: op, key: key}
					for _, v := range listOf(vals) {
						c.values = append(c.values, fmt.Sprint(v))
					}
					s.conditions = append(s.conditions, c)
				}
			}
			stmts = append(stmts, s)
		}
		p.ByCaller[fn.Name] = stmts
	}
	return p, nil
}

func listOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// wildcard matches IAM's * and ? (actions case-insensitively).
func wildcard(pattern, s string, fold bool) bool {
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	ok, err := path.Match(strings.ReplaceAll(pattern, "/", "\x00"), strings.ReplaceAll(s, "/", "\x00"))
	return err == nil && ok
}

// Allows evaluates caller's statements for action on resource, with the
// request's condition keys: an explicit deny wins, then any allow.
func (p *Policies) Allows(caller, action, resource string, keys map[string][]string) bool {
	stmts, checked := p.ByCaller[caller]
	if !checked {
		return true
	}
	allowed := false
	for _, s := range stmts {
		if !s.matches(action, resource, keys) {
			continue
		}
		if !s.Allow {
			return false
		}
		allowed = true
	}
	return allowed
}

func (s Statement) matches(action, resource string, keys map[string][]string) bool {
	hit := false
	for _, a := range s.Actions {
		hit = hit || wildcard(a, action, true)
	}
	if !hit {
		return false
	}
	hit = false
	for _, r := range s.Resources {
		hit = hit || wildcard(r, resource, false)
	}
	if !hit {
		return false
	}
	for _, c := range s.conditions {
		if !c.holds(keys[c.key]) {
			return false
		}
	}
	return true
}

// holds evaluates a condition on the request's values of its key. As IAM:
// ForAllValues holds for no values at all; a single-valued operator needs
// the key present, unless it is an ...IfExists operator, which holds when
// the key is absent.
func (c condition) holds(got []string) bool {
	if strings.HasSuffix(c.op, "IfExists") {
		if len(got) == 0 {
			return true
		}
		c.op = strings.TrimSuffix(c.op, "IfExists")
	}
	like := strings.HasSuffix(c.op, "StringLike")
	match := func(v string) bool {
		for _, want := range c.values {
			if (like && wildcard(want, v, false)) || (!like && want == v) {
				return true
			}
		}
		return false
	}
	switch {
	case strings.HasPrefix(c.op, "ForAllValues:"):
		for _, v := range got {
			if !match(v) {
				return false
			}
		}
		return true
	case strings.HasPrefix(c.op, "ForAnyValue:"):
		for _, v := range got {
			if match(v) {
				return true
			}
		}
		return false
	}
	return len(got) == 1 && match(got[0])
}

// Denial is AWS's message for a refused call.
func (p *Policies) Denial(caller, action, resource string) string {
	return fmt.Sprintf("User: arn:aws:sts::%s:assumed-role/%s/%s is not authorized to perform: %s on resource: %s because no identity-based policy allows the %s action",
		stack.Account, p.Roles[caller], caller, action, resource, action)
}

// Require is a permission a mapping or destination needs from a
// function's role, which AWS checks when it creates it.
func (p *Policies) Require(caller string, resource string, actions ...string) error {
	var missing []string
	for _, a := range actions {
		if !p.Allows(caller, a, resource, nil) {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the execution role of %s (%s) does not allow %s on %s, which Lambda needs for the function's event source or destination: AWS refuses to create it",
			caller, p.Roles[caller], strings.Join(missing, ", "), resource)
	}
	return nil
}

// dynamoGuard stands in front of the engine for the functions: it checks
// each call against the caller's role and passes the allowed ones on.
type DynamoGuard struct {
	ids    *Identities
	pol    *Policies
	proxy  *httputil.ReverseProxy
	tables map[string]map[string]string // table name -> index name ("" for the table) -> its partition key attribute
}

func NewDynamoGuard(engine string, ids *Identities, pol *Policies, table string, keys map[string]string) (*DynamoGuard, error) {
	u, err := url.Parse(engine)
	if err != nil {
		return nil, err
	}
	return &DynamoGuard{ids: ids, pol: pol, proxy: httputil.NewSingleHostReverseProxy(u), tables: map[string]map[string]string{table: keys}}, nil
}

// TableKeys reads the table's partition key attribute, and each index's.
func TableKeys(props map[string]any) map[string]string {
	hash := func(schema any) string {
		for _, k := range listOf(schema) {
			km, _ := k.(map[string]any)
			if km["KeyType"] == "HASH" {
				s, _ := km["AttributeName"].(string)
				return s
			}
		}
		return ""
	}
	keys := map[string]string{"": hash(props["KeySchema"])}
	for _, g := range listOf(props["GlobalSecondaryIndexes"]) {
		gm, _ := g.(map[string]any)
		name, _ := gm["IndexName"].(string)
		keys[name] = hash(gm["KeySchema"])
	}
	return keys
}

// access is one permission a call needs, with the condition keys DynamoDB
// gives IAM for it.
type access struct {
	action, resource string
	leading          []string // dynamodb:LeadingKeys
	attributes       []string // dynamodb:Attributes
	returnValues     string   // dynamodb:ReturnValues ("" when the action takes none)
	sel              string   // dynamodb:Select (Query, Scan)
}

// keys are the access's condition keys, as IAM gets them: an absent one
// is absent (ForAllValues holds, a single-valued operator does not).
func (a access) keys() map[string][]string {
	k := map[string][]string{"dynamodb:LeadingKeys": a.leading, "dynamodb:Attributes": a.attributes}
	if a.returnValues != "" {
		k["dynamodb:ReturnValues"] = []string{a.returnValues}
	}
	if a.sel != "" {
		k["dynamodb:Select"] = []string{a.sel}
	}
	return k
}

func (g *DynamoGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, code, msg := g.ids.Of(r)
	if code != "" {
		dynamoError(w, "UnrecognizedClientException", msg)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		dynamoError(w, "SerializationException", "the request could not be read")
		return
	}
	target := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	for _, a := range g.accesses(target, body) {
		if !g.pol.Allows(caller, a.action, a.resource, a.keys()) {
			dynamoError(w, "AccessDeniedException", g.pol.Denial(caller, a.action, a.resource))
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	g.proxy.ServeHTTP(w, r)
}

func dynamoError(w http.ResponseWriter, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazon.coral.service#" + code, "Message": msg})
}

func (g *DynamoGuard) arn(table, index string) string {
	a := "arn:aws:dynamodb:" + stack.Region + ":" + stack.Account + ":table/" + table
	if index != "" {
		a += "/index/" + index
	}
	return a
}

// accesses are the permissions a call needs: the item-level action of each
// part of a transaction, the batch action per table, the call's own
// otherwise; each with the partition keys it touches.
func (g *DynamoGuard) accesses(target string, body []byte) []access {
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	if read, ok := accessReaders[target]; ok {
		return read(g, target, in)
	}
	return []access{{action: "dynamodb:" + target, resource: g.arn(str(in, "TableName"), "")}}
}

// accessReaders read what IAM sees of the actions it sees by item, by
// batch or by query; any other action is one access to its table.
var accessReaders = map[string]func(g *DynamoGuard, target string, in map[string]any) []access{
	"GetItem":            itemAccesses,
	"PutItem":            itemAccesses,
	"UpdateItem":         itemAccesses,
	"DeleteItem":         itemAccesses,
	"TransactWriteItems": transactAccesses,
	"TransactGetItems":   transactAccesses,
	"BatchGetItem":       batchAccesses,
	"BatchWriteItem":     batchAccesses,
	"Query":              queryAccesses,
	"Scan":               queryAccesses,
	"ListTables": func(*DynamoGuard, string, map[string]any) []access {
		return []access{{action: "dynamodb:ListTables", resource: "*"}}
	},
}

// str is m's string member k ("" when absent).
func str(m map[string]any, k string) string { v, _ := m[k].(string); return v }

// item is the access of one item's action on m (a request, or a part of
// a transaction).
func (g *DynamoGuard) item(action string, m map[string]any) access {
	table := str(m, "TableName")
	a := access{action: "dynamodb:" + action, resource: g.arn(table, ""), attributes: requestAttributes(m)}
	for _, k := range []string{"Key", "Item"} {
		if v := g.keyValue(table, "", m[k]); v != "" {
			a.leading = append(a.leading, v)
		}
	}
	if action == "PutItem" || action == "UpdateItem" || action == "DeleteItem" {
		// A write always has ReturnValues: NONE when not sent.
		a.returnValues = cmp.Or(str(m, "ReturnValues"), "NONE")
	}
	return a
}

// itemAccesses: GetItem, PutItem, UpdateItem, DeleteItem.
func itemAccesses(g *DynamoGuard, target string, in map[string]any) []access {
	return []access{g.item(target, in)}
}

// transactAccesses: each part of a transaction, as its own item action.
func transactAccesses(g *DynamoGuard, _ string, in map[string]any) []access {
	var out []access
	for _, ti := range listOf(in["TransactItems"]) {
		tm, _ := ti.(map[string]any)
		for part, action := range map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"} {
			if pm, ok := tm[part].(map[string]any); ok {
				out = append(out, g.item(action, pm))
			}
		}
	}
	return out
}

// batchAccesses: one access per table of a batch, with every item's key.
func batchAccesses(g *DynamoGuard, target string, in map[string]any) []access {
	var out []access
	reqs, _ := in["RequestItems"].(map[string]any)
	tables := make([]string, 0, len(reqs))
	for t := range reqs {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, table := range tables {
		a := access{action: "dynamodb:" + target, resource: g.arn(table, "")}
		var entries []any
		if target == "BatchGetItem" {
			rm, _ := reqs[table].(map[string]any)
			entries = listOf(rm["Keys"])
		} else {
			for _, wr := range listOf(reqs[table]) {
				wm, _ := wr.(map[string]any)
				if pr, ok := wm["PutRequest"].(map[string]any); ok {
					entries = append(entries, pr["Item"])
				}
				if dr, ok := wm["DeleteRequest"].(map[string]any); ok {
					entries = append(entries, dr["Key"])
				}
			}
		}
		for _, e := range entries {
			if v := g.keyValue(table, "", e); v != "" {
				a.leading = append(a.leading, v)
			}
		}
		out = append(out, a)
	}
	return out
}

// queryAccesses: a Query's or Scan's table or index, with what it selects
// and (a Query) the partition it reads.
func queryAccesses(g *DynamoGuard, target string, in map[string]any) []access {
	table, index := str(in, "TableName"), str(in, "IndexName")
	a := access{action: "dynamodb:" + target, resource: g.arn(table, index), attributes: requestAttributes(in), sel: str(in, "Select")}
	if a.sel == "" {
		a.sel = "ALL_ATTRIBUTES"
		if in["ProjectionExpression"] != nil || in["AttributesToGet"] != nil {
			a.sel = "SPECIFIC_ATTRIBUTES"
		} else if index != "" {
			a.sel = "ALL_PROJECTED_ATTRIBUTES"
		}
	}
	if target == "Query" {
		if v := g.queryKey(table, index, in); v != "" {
			a.leading = []string{v}
		}
	}
	return []access{a}
}

// requestAttributes are the top-level attribute names a request names, as
// DynamoDB gives them to IAM in dynamodb:Attributes: its key's and item's,
// and every name in its expressions (update, condition, projection,
// filter, key condition; a #placeholder resolved, a nested path counted as
// the attribute it starts at) and legacy parameters. Attributes a request
// would return without naming them (ReturnValues ALL_NEW) are not among
// them: "attribute conditions are evaluated only on attributes specified
// in the request", which is why a policy that limits attributes also
// limits ReturnValues and Select.
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/specifying-conditions.html
func requestAttributes(m map[string]any) []string {
	seen := map[string]bool{}
	for _, k := range []string{"Key", "Item", "AttributeUpdates", "Expected", "KeyConditions", "QueryFilter", "ScanFilter"} {
		if mm, ok := m[k].(map[string]any); ok {
			for name := range mm {
				seen[name] = true
			}
		}
	}
	for _, a := range listOf(m["AttributesToGet"]) {
		if s, ok := a.(string); ok {
			seen[s] = true
		}
	}
	names, _ := m["ExpressionAttributeNames"].(map[string]any)
	for _, k := range []string{"UpdateExpression", "ConditionExpression", "ProjectionExpression", "FilterExpression", "KeyConditionExpression"} {
		expr, _ := m[k].(string)
		for _, n := range expressionNames(expr, names) {
			seen[n] = true
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// expressionWords are an expression's keywords and functions, which name
// no attribute.
var expressionWords = map[string]bool{"set": true, "remove": true, "add": true, "delete": true, "and": true, "or": true, "not": true,
	"between": true, "in": true, "attribute_exists": true, "attribute_not_exists": true, "attribute_type": true, "begins_with": true,
	"contains": true, "size": true, "if_not_exists": true, "list_append": true}

// expressionNames are the top-level attribute names in a DynamoDB
// expression: each path's first element (#name resolved), not a :value, a
// keyword or a function, nor an element after a dot.
func expressionNames(expr string, names map[string]any) []string {
	var out []string
	for i := 0; i < len(expr); {
		c := expr[i]
		word := func() string {
			j := i + 1
			for j < len(expr) && (expr[j] == '_' || expr[j] >= '0' && expr[j] <= '9' || expr[j] >= 'a' && expr[j] <= 'z' || expr[j] >= 'A' && expr[j] <= 'Z') {
				j++
			}
			w := expr[i:j]
			i = j
			return w
		}
		nested := i > 0 && strings.TrimRight(expr[:i], " ") != "" && strings.TrimRight(expr[:i], " ")[len(strings.TrimRight(expr[:i], " "))-1] == '.'
		switch {
		case c == ':':
			word()
		case c == '#':
			w := word()
			if !nested {
				if n, ok := names[w].(string); ok {
					out = append(out, n)
				}
			}
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			w := word()
			if nested || expressionWords[strings.ToLower(w)] || strings.HasPrefix(strings.TrimLeft(expr[i:], " "), "(") {
				continue
			}
			out = append(out, w)
		default:
			i++
		}
	}
	return out
}

// keyValue is the partition key's string value in an item or key.
func (g *DynamoGuard) keyValue(table, index string, v any) string {
	m, _ := v.(map[string]any)
	attr := g.tables[table][index]
	av, _ := m[attr].(map[string]any)
	s, _ := av["S"].(string)
	return s
}

var (
	equalsPart = regexp.MustCompile(`^\(?\s*(#?[A-Za-z0-9_]+)\s*=\s*(:[A-Za-z0-9_]+)\s*\)?$`)
	andWord    = regexp.MustCompile(`(?i)\s+AND\s+`)
)

// queryKey is the partition key value a Query's key condition names.
func (g *DynamoGuard) queryKey(table, index string, in map[string]any) string {
	expr, _ := in["KeyConditionExpression"].(string)
	names, _ := in["ExpressionAttributeNames"].(map[string]any)
	values, _ := in["ExpressionAttributeValues"].(map[string]any)
	attr := g.tables[table][index]
	for _, part := range andWord.Split(expr, -1) {
		m := equalsPart.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			continue
		}
		name := m[1]
		if n, ok := names[name].(string); ok {
			name = n
		}
		if name == attr {
			av, _ := values[m[2]].(map[string]any)
			s, _ := av["S"].(string)
			return s
		}
	}
	return ""
}
