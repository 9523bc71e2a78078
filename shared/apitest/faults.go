package apitest

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/practice-api/practice-api/shared/store"
)

// FaultMode says when an injected fault strikes.
type FaultMode int

const (
	// FailBefore fails the call before it reaches the store: nothing happens there.
	FailBefore FaultMode = iota
	// FailAfter lets the call complete in the store, then loses its answer:
	// the caller sees an error for a write that did happen.
	FailAfter
)

// ErrInjected is the error an armed fault returns.
var ErrInjected = errors.New("injected fault")

// Faults fails one chosen DynamoDB call, or holds calls at a barrier. It
// sits at the Initialize step, above the SDK's retries, so one fault is one
// failed operation.
type Faults struct {
	mu    sync.Mutex
	armed bool
	nth   []int
	mode  FaultMode
	seen  int
	fired bool
	err   error // what a fault returns (ErrInjected when nil)

	barrier *barrier
	delay   func(input any) time.Duration
	answer  func(ctx context.Context, input any) error
}

// Answer fails every call for which answer returns an error with that
// error, before the call reaches the store (nil stops it). ctx is the
// call's, the request's, so a test can fail one organisation's calls
// (httpapi.OrgID(ctx)) while others' pass. StoreError builds the error
// as the SDK reads an engine's answer.
func (f *Faults) Answer(answer func(ctx context.Context, input any) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answer = answer
}

// StoreError is err (an SDK error type, or a *smithy.GenericAPIError
// for a code the SDK has no type for, such as AccessDeniedException) as
// the SDK returns an engine's answer of status to a call: inside the
// response's error, which the client wraps in the operation's. An
// Initialize-step fault sits above the SDK's retries, so it is not
// retried.
func StoreError(status int, err error) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: status, Header: http.Header{}}}
	return &awshttp.ResponseError{RequestID: "injected", ResponseError: &smithyhttp.ResponseError{Response: resp, Err: err}}
}

// Delay holds each call for as long as slow says (0: not at all): a slow
// network or store, for tests of what a late answer does.
func (f *Faults) Delay(slow func(input any) time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.delay = slow
}

// barrier holds the calls it matches until n of them wait (or a timeout).
type barrier struct {
	match   func(input any) bool
	n       int
	waiting int
	open    chan struct{}
}

// Barrier holds the next n calls whose input matches until all n have
// arrived, then lets them through together: concurrent requests then reach
// the store at the same instant, for tests of races. It gives up after 5 s.
func (f *Faults) Barrier(n int, match func(input any) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.barrier = &barrier{match: match, n: n, open: make(chan struct{})}
}

func (f *Faults) hold(input any) {
	f.mu.Lock()
	b := f.barrier
	if b == nil || b.waiting >= b.n || !b.match(input) {
		f.mu.Unlock()
		return
	}
	b.waiting++
	if b.waiting == b.n {
		close(b.open)
		f.barrier = nil
	}
	f.mu.Unlock()
	select {
	case <-b.open:
	case <-time.After(5 * time.Second):
	}
}

// Arm makes the given calls (1-based, counted from now) fail in mode.
func (f *Faults) Arm(mode FaultMode, nth ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed, f.nth, f.mode, f.seen, f.fired, f.err = true, nth, mode, 0, false, nil
}

// ArmError makes the nth call (counted from now) fail before it reaches
// the store with err, as the store would answer it (a cancelled
// transaction, a throttle).
func (f *Faults) ArmError(err error, nth int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed, f.nth, f.mode, f.seen, f.fired, f.err = true, []int{nth}, FailBefore, 0, false, err
}

// Disarm stops injecting and reports whether the armed fault fired.
func (f *Faults) Disarm() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
	return f.fired
}

// Middleware is the smithy hook.
func (f *Faults) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("injectFaults",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			f.hold(in.Parameters)
			f.mu.Lock()
			if answer := f.answer; answer != nil {
				f.mu.Unlock()
				if err := answer(ctx, in.Parameters); err != nil {
					return middleware.InitializeOutput{}, middleware.Metadata{}, err
				}
				f.mu.Lock()
			}
			if slow := f.delay; slow != nil {
				f.mu.Unlock()
				if d := slow(in.Parameters); d > 0 {
					time.Sleep(d)
				}
				f.mu.Lock()
			}
			strike := false
			if f.armed {
				f.seen++
				strike = slices.Contains(f.nth, f.seen)
				if strike {
					f.fired = true
				}
			}
			mode, ferr := f.mode, f.err
			f.mu.Unlock()
			if ferr == nil {
				ferr = ErrInjected
			}
			if strike && mode == FailBefore {
				return middleware.InitializeOutput{}, middleware.Metadata{}, ferr
			}
			out, md, err := next.HandleInitialize(ctx, in)
			if strike && err == nil {
				return middleware.InitializeOutput{}, md, ErrInjected
			}
			return out, md, err
		}), middleware.Before)
}

// Items returns every item of org's partition, by kind (a test-only Scan:
// the API itself never scans).
func (e *Env) Items(org string) map[string][]map[string]ddbtypes.AttributeValue {
	e.t.Helper()
	out := map[string][]map[string]ddbtypes.AttributeValue{}
	p := dynamodb.NewScanPaginator(e.DB.Client, &dynamodb.ScanInput{TableName: aws.String(e.DB.Table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			e.t.Fatal(err)
		}
		for _, it := range page.Items {
			if pk, _ := it[store.AttrPK].(*ddbtypes.AttributeValueMemberS); pk == nil || pk.Value != store.OrgPK(org) {
				continue
			}
			kind := ""
			if k, ok := it["kind"].(*ddbtypes.AttributeValueMemberS); ok {
				kind = k.Value
			}
			out[kind] = append(out[kind], it)
		}
	}
	return out
}

// AttrS returns an item's string attribute name ("" when it has none or
// it is not a string): for the items Items returns.
func AttrS(item map[string]ddbtypes.AttributeValue, name string) string {
	if v, ok := item[name].(*ddbtypes.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}
