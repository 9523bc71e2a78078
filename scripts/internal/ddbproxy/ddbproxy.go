// Package ddbproxy is a DynamoDB endpoint in front of another (DynamoDB
// Local): it forwards every call unchanged but for asking each for its
// consumed capacity, and keeps what each call consumed, by operation and by
// partition key, as DynamoDB bills it (capacity.Meter's rules, for
// processes it cannot instrument: a local runtime's functions). make
// capacity reads it.
package ddbproxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/store/capacity"
)

// Proxy forwards to Target and records capacity.
type Proxy struct {
	Target string
	// Reader reads the images of a transaction's items on Target (a client
	// that does not pass through the proxy).
	Reader *dynamodb.Client
	HTTP   *http.Client

	mu    sync.Mutex
	total capacity.Capacity
	keys  map[string]float64 // partition key ("GSI1 <pk>" for an index's) -> WRU
	ops   map[string]capacity.Capacity
}

// ServeHTTP forwards one call.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	var in map[string]any
	metered := isData(op) && json.Unmarshal(body, &in) == nil
	var before []map[string]ddbtypes.AttributeValue
	if metered {
		in["ReturnConsumedCapacity"] = "INDEXES"
		body, _ = json.Marshal(in)
		if op == "TransactWriteItems" {
			before = p.images(r.Context(), in)
		}
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.Target+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	req.Header.Del("Content-Length")
	resp, err := p.client().Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	for k, v := range resp.Header {
		if k != "Content-Length" && k != "X-Amz-Crc32" { // the body is the engine's, but the proxy re-sends it
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(out)
	if metered {
		p.record(r.Context(), op, in, before, resp.StatusCode, out)
	}
}

func (p *Proxy) client() *http.Client {
	if p.HTTP != nil {
		return p.HTTP
	}
	return http.DefaultClient
}

// isData reports whether op reads or writes items (and can report its
// capacity).
func isData(op string) bool {
	switch op {
	case "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "BatchWriteItem",
		"TransactGetItems", "TransactWriteItems":
		return true
	}
	return false
}

func writes(op string) bool {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems":
		return true
	}
	return false
}

// record accounts for one answered call.
func (p *Proxy) record(ctx context.Context, op string, in map[string]any, before []map[string]ddbtypes.AttributeValue, status int, out []byte) {
	c := capacity.Capacity{Calls: 1, ByIndex: map[string]float64{}}
	keys := map[string]float64{}
	switch {
	case status == http.StatusOK && op == "TransactWriteItems":
		after := p.images(ctx, in)
		tx := txInput(in)
		c.AddTransaction(tx, before, after)
		for i, it := range tx.TransactItems {
			for k, u := range capacity.TransactionKeys(it, before[i], after[i]) {
				keys[k] += u
			}
		}
	case status == http.StatusOK:
		var resp struct {
			ConsumedCapacity json.RawMessage `json:"ConsumedCapacity"`
		}
		_ = json.Unmarshal(out, &resp)
		for _, cc := range consumed(resp.ConsumedCapacity) {
			units := cc.CapacityUnits
			if writes(op) {
				c.WRU += units
			} else {
				c.RRU += units
			}
			if cc.Table != nil {
				c.ByIndex["table"] += cc.Table.CapacityUnits
			}
			for name, ic := range cc.GlobalSecondaryIndexes {
				c.ByIndex[name] += ic.CapacityUnits
			}
		}
		if writes(op) {
			// The item's units to its partition, each index's to the entry's
			// (known for a put; an update's is named by the index alone).
			pk := partition(in)
			item, _ := in["Item"].(map[string]any)
			for where, u := range c.ByIndex {
				switch {
				case where == "table" && pk != "":
					keys[pk] += u
				case where != "table":
					label := where + " (updated)"
					if v, ok := fromWire(item[where+"PK"]).(*ddbtypes.AttributeValueMemberS); ok {
						label = where + " " + v.Value
					}
					keys[label] += u
				}
			}
		}
	case strings.Contains(string(out), "ConditionalCheckFailedException") && (op == "PutItem" || op == "UpdateItem" || op == "DeleteItem"):
		c.WRU, c.ByIndex["table"] = 1, 1 // billed as a write of the item
		if pk := partition(in); pk != "" {
			keys[pk]++
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total.Add(c)
	if p.ops == nil {
		p.ops, p.keys = map[string]capacity.Capacity{}, map[string]float64{}
	}
	oc := p.ops[op]
	oc.Add(c)
	p.ops[op] = oc
	for k, u := range keys {
		p.keys[k] += u
	}
}

// Report is what the proxy recorded.
type Report struct {
	Total capacity.Capacity
	ByOp  map[string]capacity.Capacity
	// Hottest are the partition keys with the most write units, most first.
	Hottest []KeyUnits
	// KeyWRU sums the write units attributed to partition keys (base
	// items and index entries).
	KeyWRU float64
}

// KeyUnits is a partition key's write units.
type KeyUnits struct {
	Key string
	WRU float64
}

// Report returns what was recorded, with the n hottest keys.
func (p *Proxy) Report(n int) Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{Total: p.total, ByOp: map[string]capacity.Capacity{}}
	for op, c := range p.ops {
		r.ByOp[op] = c
	}
	for k, u := range p.keys {
		r.Hottest = append(r.Hottest, KeyUnits{k, u})
		r.KeyWRU += u
	}
	sort.Slice(r.Hottest, func(i, j int) bool { return r.Hottest[i].WRU > r.Hottest[j].WRU })
	if len(r.Hottest) > n {
		r.Hottest = r.Hottest[:n]
	}
	return r
}

// Reset forgets what was recorded.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.ops, p.keys = capacity.Capacity{}, nil, nil
}

type wireCapacity struct {
	CapacityUnits float64 `json:"CapacityUnits"`
	Table         *struct {
		CapacityUnits float64 `json:"CapacityUnits"`
	} `json:"Table"`
	GlobalSecondaryIndexes map[string]struct {
		CapacityUnits float64 `json:"CapacityUnits"`
	} `json:"GlobalSecondaryIndexes"`
}

// consumed reads a ConsumedCapacity that is one object or a list.
func consumed(raw json.RawMessage) []wireCapacity {
	if len(raw) == 0 {
		return nil
	}
	var one wireCapacity
	if json.Unmarshal(raw, &one) == nil && raw[0] == '{' {
		return []wireCapacity{one}
	}
	var list []wireCapacity
	_ = json.Unmarshal(raw, &list)
	return list
}

// partition is the base partition key a single-item write names.
func partition(in map[string]any) string {
	for _, f := range []string{"Key", "Item"} {
		if m, ok := in[f].(map[string]any); ok {
			if av, ok := fromWire(m[store.AttrPK]).(*ddbtypes.AttributeValueMemberS); ok {
				return av.Value
			}
		}
	}
	return ""
}

// images reads the current item of every action of a TransactWriteItems
// input given as wire JSON.
func (p *Proxy) images(ctx context.Context, in map[string]any) []map[string]ddbtypes.AttributeValue {
	tx := txInput(in)
	m := capacity.Meter{Reader: p.Reader}
	return m.Images(ctx, tx)
}

// txInput turns a wire TransactWriteItems input into the SDK's.
func txInput(in map[string]any) *dynamodb.TransactWriteItemsInput {
	out := &dynamodb.TransactWriteItemsInput{}
	items, _ := in["TransactItems"].([]any)
	for _, raw := range items {
		it, _ := raw.(map[string]any)
		var t ddbtypes.TransactWriteItem
		table := func(m map[string]any) *string {
			s, _ := m["TableName"].(string)
			return &s
		}
		if m, ok := it["Put"].(map[string]any); ok {
			t.Put = &ddbtypes.Put{TableName: table(m), Item: itemOf(m["Item"])}
		}
		if m, ok := it["Update"].(map[string]any); ok {
			t.Update = &ddbtypes.Update{TableName: table(m), Key: itemOf(m["Key"])}
		}
		if m, ok := it["Delete"].(map[string]any); ok {
			t.Delete = &ddbtypes.Delete{TableName: table(m), Key: itemOf(m["Key"])}
		}
		if m, ok := it["ConditionCheck"].(map[string]any); ok {
			t.ConditionCheck = &ddbtypes.ConditionCheck{TableName: table(m), Key: itemOf(m["Key"])}
		}
		out.TransactItems = append(out.TransactItems, t)
	}
	return out
}

func itemOf(v any) map[string]ddbtypes.AttributeValue {
	m, _ := v.(map[string]any)
	out := make(map[string]ddbtypes.AttributeValue, len(m))
	for k, e := range m {
		if av := fromWire(e); av != nil {
			out[k] = av
		}
	}
	return out
}

// fromWire turns DynamoDB's JSON form of a value ({"S": "x"}) into the SDK's.
func fromWire(v any) ddbtypes.AttributeValue {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil
	}
	for typ, e := range m {
		switch typ {
		case "S":
			s, _ := e.(string)
			return &ddbtypes.AttributeValueMemberS{Value: s}
		case "N":
			s, _ := e.(string)
			return &ddbtypes.AttributeValueMemberN{Value: s}
		case "B":
			s, _ := e.(string)
			b, _ := base64.StdEncoding.DecodeString(s)
			return &ddbtypes.AttributeValueMemberB{Value: b}
		case "BOOL":
			b, _ := e.(bool)
			return &ddbtypes.AttributeValueMemberBOOL{Value: b}
		case "NULL":
			return &ddbtypes.AttributeValueMemberNULL{Value: true}
		case "SS", "NS":
			var ss []string
			for _, x := range asList(e) {
				s, _ := x.(string)
				ss = append(ss, s)
			}
			if typ == "SS" {
				return &ddbtypes.AttributeValueMemberSS{Value: ss}
			}
			return &ddbtypes.AttributeValueMemberNS{Value: ss}
		case "L":
			var l []ddbtypes.AttributeValue
			for _, x := range asList(e) {
				if av := fromWire(x); av != nil {
					l = append(l, av)
				}
			}
			return &ddbtypes.AttributeValueMemberL{Value: l}
		case "M":
			return &ddbtypes.AttributeValueMemberM{Value: itemOf(e)}
		}
	}
	return nil
}

func asList(v any) []any { l, _ := v.([]any); return l }
