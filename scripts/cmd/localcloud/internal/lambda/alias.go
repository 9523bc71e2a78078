package lambda

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Alias is a function's alias (the template's "live", which routes,
// mappings and rules invoke): it runs one or two versions of the function,
// each invocation on one of them by the alias's weights, as Lambda's
// weighted aliases do. Lambda picks at random with those weights; the
// alias here spreads them evenly (each invocation adds the extra
// version's weight to a credit, and the one that brings it to 1 goes to
// that version), so a tenth is exactly every tenth call. The versions
// share the function's concurrency.
// https://docs.aws.amazon.com/lambda/latest/dg/configuring-alias-routing.html
type Alias struct {
	AliasName string
	base      *Function

	mu             sync.Mutex
	versions       map[string]*Function
	primary, extra string
	weight, credit float64
}

// NewAlias makes alias name of a function whose template version (its
// first, "1") is v1.
func NewAlias(name string, v1 *Function) *Alias {
	v1.Version, v1.AliasName = "1", name
	return &Alias{AliasName: name, base: v1, versions: map[string]*Function{"1": v1}, primary: "1"}
}

// Publish publishes a version of the function running bootstrap (the
// function's configuration otherwise, and AWS_LAMBDA_FUNCTION_VERSION set
// to its number), and returns its number.
func (a *Alias) Publish(bootstrap string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := strconv.Itoa(len(a.versions) + 1)
	spec := *a.base.Spec
	spec.Bootstrap = bootstrap
	env := make([]string, 0, len(a.base.Env))
	for _, kv := range a.base.Env {
		if !strings.HasPrefix(kv, "AWS_LAMBDA_FUNCTION_VERSION=") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_LAMBDA_FUNCTION_VERSION="+n)
	a.versions[n] = &Function{Spec: &spec, Env: env, arn: a.base.arn, Slots: a.base.Slots, out: a.base.out, all: map[*instance]bool{},
		InitLimit: a.base.InitLimit, Version: n, AliasName: a.AliasName, Metrics: a.base.Metrics, Clock: a.base.Clock, Ended: a.base.Ended}
	return n
}

// Route points the alias at primary, with weight (0 to 1) of the
// invocations going to extra ("" for none), as UpdateAlias's
// FunctionVersion and RoutingConfig do.
func (a *Alias) Route(primary, extra string, weight float64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.versions[primary] == nil || (extra != "" && a.versions[extra] == nil) {
		return fmt.Errorf("alias %s: no version %s/%s", a.AliasName, primary, extra)
	}
	if weight < 0 || weight >= 1 {
		return fmt.Errorf("alias %s: a weight of %v (0 to below 1)", a.AliasName, weight)
	}
	a.primary, a.extra, a.weight = primary, extra, weight
	if extra == "" {
		a.weight = 0
	}
	return nil
}

// Routing is where the alias points.
func (a *Alias) Routing() (primary, extra string, weight float64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.primary, a.extra, a.weight
}

// Version is one of the alias's function's versions (nil: none).
func (a *Alias) Version(n string) *Function {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.versions[n]
}

func (a *Alias) pick() *Function {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.extra != "" {
		a.credit += a.weight
		if a.credit >= 1-1e-9 {
			a.credit--
			return a.versions[a.extra]
		}
	}
	return a.versions[a.primary]
}

// Invoke runs one invocation on the version the weights pick.
func (a *Alias) Invoke(ctx context.Context, payload []byte, wait time.Duration) (Outcome, string, error) {
	return a.pick().Invoke(ctx, payload, wait)
}

// ARN is the alias's ARN (the function's, qualified).
func (a *Alias) ARN() string { return a.base.arn + ":" + a.AliasName }

// Name is the function's name.
func (a *Alias) Name() string { return a.base.Spec.Name }

// Reserved is the function's reserved concurrency (0: none).
func (a *Alias) Reserved() int { return a.base.Spec.Reserved }

// Stop ends every process of every version.
func (a *Alias) Stop() {
	a.mu.Lock()
	vs := make([]*Function, 0, len(a.versions))
	for _, v := range a.versions {
		vs = append(vs, v)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, v := range vs {
		wg.Go(v.Stop)
	}
	wg.Wait()
}

// RuntimeAPIs are the addresses every version's processes' Runtime APIs
// listen on.
func (a *Alias) RuntimeAPIs() []string {
	a.mu.Lock()
	vs := make([]*Function, 0, len(a.versions))
	for _, v := range a.versions {
		vs = append(vs, v)
	}
	a.mu.Unlock()
	var out []string
	for _, v := range vs {
		out = append(out, v.RuntimeAPIs()...)
	}
	return out
}

// SetFault puts a fault on every version of the function (nil lifts it).
func (a *Alias) SetFault(ft *Fault) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, v := range a.versions {
		v.SetFault(ft)
	}
}

// Started is how many invocations of the alias's versions have begun
// (crashed ones too; throttled ones not).
func (a *Alias) Started() int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	var n int64
	for _, v := range a.versions {
		n += v.Invocations.Load()
	}
	return n
}

// Running is how many of the function's invocations hold a slot of its
// concurrency now (every version's: they share it).
func (a *Alias) Running() int { return len(a.base.Slots) }
