package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/aws/aws-lambda-go/cfn"
	"strings"
	"sync"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/store/storetest"
)

// TestCeilingsCountAtTheStagesDefault (#38, item 7): the stage serves
// keys without a limit of their own at 120 a minute (the deploy's
// configseed stores that in the table); an operator's shell says RATE_LIMIT_PER_MINUTE=1. In
// three organisations with a ceiling of 300 at once, three keys without
// a limit are created at once through the tool as the operator runs it
// (openFromEnv): two pass (240) and the third is refused (360 > 300),
// where the shell's 1 would have let all three through (3) and the stage
// serve 360. A key with its own limit counts at it. Before any API
// process has stored a default, the tool counts at the built-in 120.
func TestCeilingsCountAtTheStagesDefault(t *testing.T) {
	e := apitest.New(t, apitest.Options{})
	t.Setenv("DYNAMODB_ENDPOINT", storetest.Endpoint(t))
	t.Setenv("TABLE_NAME", e.DB.Table)
	t.Setenv("RATE_LIMIT_PER_MINUTE", "1")
	ask := func(q string) (bool, error) { return false, errors.New("asked: " + q) }
	admin := func(argv ...string) (any, error) { return run(context.Background(), argv, openFromEnv, ask) }
	// No API process yet: the built-in default, not the shell's.
	env, err := openFromEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if env.keys.DefaultLimit() != config.Defaults().RateLimitPerMinute {
		t.Errorf("before the stage stored its default the tool counts at %d, want the built-in %d", env.keys.DefaultLimit(), config.Defaults().RateLimitPerMinute)
	}
	cfg := config.Defaults()
	cfg.RateLimitPerMinute = 120
	if _, _, err := app.SeedConfig(e.DB, cfg.RateLimitPerMinute)(context.Background(), cfn.Event{RequestType: cfn.RequestCreate}); err != nil { // what the deploy does
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for o := range 3 {
		org, err := auth.NewStore(e.DB, 0).CreateOrg(context.Background(), "", fmt.Sprintf("Ceiling %d", o), e.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin("org", "set-limit", "--org", org.ID, "--ceiling", "300"); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var mu sync.Mutex
			var made, refused int
			var inner sync.WaitGroup
			for k := range 3 {
				inner.Go(func() {
					_, err := admin("key", "create", "--org", org.ID, "--scopes", "matters:read", "--name", fmt.Sprint(k))
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						made++
					case strings.Contains(err.Error(), "ceiling"):
						refused++
					default:
						t.Errorf("org %d: %v", o, err)
					}
				})
			}
			inner.Wait()
			if made != 2 || refused != 1 {
				t.Errorf("org %d: %d keys made and %d refused under a ceiling of 300 at 120 each, want 2 and 1", o, made, refused)
			}
			// 240 allocated: a key of its own 60 fits, one of 61 does not.
			if _, err := admin("key", "create", "--org", org.ID, "--scopes", "matters:read", "--rate-limit", "61"); err == nil || !strings.Contains(err.Error(), "ceiling") {
				t.Errorf("org %d: a key of 61 beside 240: %v, want refused", o, err)
			}
			if _, err := admin("key", "create", "--org", org.ID, "--scopes", "matters:read", "--rate-limit", "60"); err != nil {
				t.Errorf("org %d: a key of 60 beside 240: %v", o, err)
			}
		})
	}
	wg.Wait()
}
