package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// LocalFaultPanic is the header of an engine's answer that makes the call
// panic, when the client honours local faults (Config.LocalFaults): its
// value is the panic's. A local runtime sets it from outside the process
// it tests (localcloud's table faults, behind its DynamoDB guard; a
// devserver test's proxy before the engine), to force the panic path of
// a whole runtime (the edge's recovery, its JSON 500 and its log lines),
// as a bug deep in a store call would take it (issue #38, item 1).
//
// Why a hook at all, and why here: no request a client can send may make
// the service panic, so the fault cannot be a request; the functions
// localcloud runs are the template's own bootstraps, built as they are
// deployed, so it cannot be a build tag either. It is an answer of the
// engine, which only a local runtime forges, honoured only when both
// hold: the process was told so (LOCAL_FAULTS=1, which localcloud sets
// for its functions and nothing deployed sets) and its engine is on
// loopback (DYNAMODB_ENDPOINT), where AWS's DynamoDB never is. Either
// alone is refused at start (ErrLocalFaults), so a deployed function with
// the variable set does not start rather than honour a header.
const LocalFaultPanic = "X-Local-Fault-Panic"

// ErrLocalFaults is the error of a client asked to honour local faults on
// an engine that is not on loopback.
var ErrLocalFaults = errors.New("store: local faults (LOCAL_FAULTS) are honoured only on an engine on loopback (DYNAMODB_ENDPOINT=http://127.0.0.1:…)")

// Loopback reports whether endpoint's host is a loopback address (or
// localhost).
func Loopback(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// localFaults panics a call whose answer carries LocalFaultPanic, in the
// goroutine that made the call (the request's, or one whose panic Calls
// carries back to it).
func localFaults(stack *middleware.Stack) error {
	return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("localFaults",
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if resp, ok := out.RawResponse.(*smithyhttp.Response); ok {
				if v := resp.Header.Get(LocalFaultPanic); v != "" {
					panic(fmt.Sprintf("local fault (the engine's answer to %s asked for a panic): %s", middleware.GetOperationName(ctx), v))
				}
			}
			return out, md, err
		}), middleware.Before)
}
