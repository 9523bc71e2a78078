// Package tablefaults is the table's side of a fault campaign: it stands
// between localcloud's DynamoDB guard (package iam, which has checked the
// caller's role) and the engine, and makes one function's calls to the
// table fail as DynamoDB's own failures look to the SDK — throttled
// (400 ProvisionedThroughputExceededException), failing (500
// InternalServerError) or slow (answered late, or not before the caller
// gives up) — and publishes what DynamoDB publishes for them:
// AWS/DynamoDB ThrottledRequests and SystemErrors per TableName and
// Operation, one per request refused. DynamoDB Local does neither.
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/metrics-dimensions.html
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/TroubleshootingThrottling-cloudwatch.html
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html
package tablefaults

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/shared/store"
)

// Kinds of fault.
const (
	Throttle = "throttle" // 400 ProvisionedThroughputExceededException, ThrottledRequests
	Fail     = "fail"     // 500 InternalServerError, SystemErrors
	Slow     = "slow"     // answered Delay late (or never, if the caller stops waiting first)
	// Panic passes the call on, and its answer asks the caller to panic
	// with Message (store.LocalFaultPanic): the panic path of a function,
	// forced from outside it, as a bug in a store call would take it.
	// DynamoDB has no such answer; a function honours it only under a
	// local runtime (LOCAL_FAULTS, an engine on loopback).
	Panic = "panic"
)

// Fault is what one caller's calls to the table do.
type Fault struct {
	Kind    string
	Delay   time.Duration // Slow
	Message string        // Panic: the panic's value
}

// Faults passes calls on to the engine, but those of a caller with a fault.
type Faults struct {
	// Caller is who signed a request (a function's name), as the guard
	// knows it (iam.Identities.Of).
	Caller func(r *http.Request) string
	// Metrics gets AWS/DynamoDB's metrics of the refused calls (nil: none).
	Metrics *cloudwatch.Store

	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	by    map[string]Fault
}

// New passes calls on to the engine at its URL.
func New(engine string, caller func(*http.Request) string) (*Faults, error) {
	u, err := url.Parse(engine)
	if err != nil {
		return nil, err
	}
	return &Faults{Caller: caller, proxy: httputil.NewSingleHostReverseProxy(u), by: map[string]Fault{}}, nil
}

// Set puts a fault on a caller's calls (Kind "": none).
func (f *Faults) Set(caller string, ft Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ft.Kind == "" {
		delete(f.by, caller)
		return
	}
	f.by[caller] = ft
}

func (f *Faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	ft, faulty := f.by[f.Caller(r)]
	f.mu.Unlock()
	if !faulty {
		f.proxy.ServeHTTP(w, r)
		return
	}
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	body, _ := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	var in struct{ TableName string }
	_ = json.Unmarshal(body, &in)
	table := in.TableName
	if table == "" { // a transaction or a batch: the table of its first item
		var tx struct {
			TransactItems []map[string]struct{ TableName string }
			RequestItems  map[string]any
		}
		_ = json.Unmarshal(body, &tx)
		if len(tx.TransactItems) > 0 {
			for _, part := range tx.TransactItems[0] {
				table = part.TableName
			}
		}
		for name := range tx.RequestItems {
			table = name
		}
	}
	metric := func(name string) {
		if f.Metrics != nil {
			f.Metrics.Put(cloudwatch.Metric{Namespace: "AWS/DynamoDB", Name: name, Dims: map[string]string{"TableName": table, "Operation": op}}, 1)
		}
	}
	switch ft.Kind {
	case Throttle:
		metric("ThrottledRequests")
		answer(w, http.StatusBadRequest, "ProvisionedThroughputExceededException",
			"Throughput exceeds the current capacity of your table or index. DynamoDB is automatically scaling your table or index so please try again shortly. "+
				"If exceptions persist, check if you have a hot key: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html")
	case Fail:
		metric("SystemErrors")
		answer(w, http.StatusInternalServerError, "InternalServerError", "Internal server error")
	case Slow:
		select {
		case <-time.After(ft.Delay):
		case <-r.Context().Done():
			return // the caller gave up: no answer
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		f.proxy.ServeHTTP(w, r)
	case Panic:
		w.Header().Set(store.LocalFaultPanic, cmp.Or(ft.Message, "a panic forced by localcloud's table faults"))
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		f.proxy.ServeHTTP(w, r)
	default:
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.proxy.ServeHTTP(w, r)
	}
}

// answer is DynamoDB's error document (awsJson1_0).
func answer(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.dynamodb.v20120810#" + code, "message": msg})
}
