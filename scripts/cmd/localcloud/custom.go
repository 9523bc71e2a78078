package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// createCustomResources does what CloudFormation does with the template's
// custom resources when it creates the stack (the stage's secrets, made
// by configseed, before the functions that read them): each in turn, its
// function is invoked with a Create request, and the answer is awaited at
// the request's ResponseURL (a PUT of SUCCESS or FAILED) until its
// ServiceTimeout. A FAILED answer, an error of the function, or no answer
// stops localcloud, as each fails a stack's create. A restart on the same
// data sends Create again: a handler makes what is missing and keeps what
// is there.
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-requests.html
// https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/crpg-ref-responses.html
func createCustomResources(ctx context.Context, st *stack.Stack, fns map[string]*lambda.Alias) error {
	if len(st.CustomResources) == 0 {
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var mu sync.Mutex
	waiting := map[string]chan customAnswer{}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ch := waiting[strings.TrimPrefix(r.URL.Path, "/")]
		mu.Unlock()
		var a customAnswer
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if r.Method != http.MethodPut || ch == nil || json.Unmarshal(body, &a) != nil {
			http.Error(w, "not a response to a request of this stack", http.StatusForbidden) // as S3 answers a wrong pre-signed URL
			return
		}
		select {
		case ch <- a:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	for _, cr := range st.CustomResources {
		fn := fns[cr.Function]
		if fn == nil {
			return fmt.Errorf("custom resource %s: its ServiceToken names %s, which is not a function of the template", cr.ID, cr.Function)
		}
		id := rand.Text()
		ch := make(chan customAnswer, 1)
		mu.Lock()
		waiting[id] = ch
		mu.Unlock()
		props := maps.Clone(cr.Properties)
		ev, _ := json.Marshal(map[string]any{
			"RequestType": "Create", "RequestId": id, "ResponseURL": "http://" + ln.Addr().String() + "/" + id,
			"ResourceType": cr.Type, "LogicalResourceId": cr.ID, "ResourceProperties": props,
			"StackId": "arn:aws:cloudformation:" + stack.Region + ":" + stack.Account + ":stack/localcloud/" + id,
		})
		// CloudFormation invokes asynchronously: the answer is the PUT,
		// whatever the invocation returns.
		invoked := make(chan error, 1)
		go func() {
			o, _, err := fn.Invoke(ctx, ev, 0)
			if err == nil && o.Status != "ok" {
				err = fmt.Errorf("%s: %s", o.Status, o.Body)
			}
			invoked <- err
		}()
		timer := time.NewTimer(cr.Timeout)
		select {
		case a := <-ch:
			timer.Stop()
			if a.Status != "SUCCESS" {
				return fmt.Errorf("custom resource %s (%s) failed to create: %s", cr.ID, cr.Type, a.Reason)
			}
			slog.Info("custom resource created", "resource", cr.ID, "type", cr.Type, "physical_id", a.PhysicalResourceID)
		case err := <-invoked:
			if err != nil {
				timer.Stop()
				return fmt.Errorf("custom resource %s (%s): its function failed and never answered: %w", cr.ID, cr.Type, err)
			}
			select { // it returned: its answer is on the way, or never comes
			case a := <-ch:
				timer.Stop()
				if a.Status != "SUCCESS" {
					return fmt.Errorf("custom resource %s (%s) failed to create: %s", cr.ID, cr.Type, a.Reason)
				}
				slog.Info("custom resource created", "resource", cr.ID, "type", cr.Type, "physical_id", a.PhysicalResourceID)
			case <-timer.C:
				return fmt.Errorf("custom resource %s (%s): no answer within its ServiceTimeout (%s)", cr.ID, cr.Type, cr.Timeout)
			}
		case <-timer.C:
			return fmt.Errorf("custom resource %s (%s): no answer within its ServiceTimeout (%s)", cr.ID, cr.Type, cr.Timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// customAnswer is a custom resource's response, as its handler PUTs it.
type customAnswer struct {
	Status, Reason, PhysicalResourceID string
}
