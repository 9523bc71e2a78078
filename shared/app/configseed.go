package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/practice-api/practice-api/shared/auth"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/store"
)

// ConfigSeedID is the StageSecrets resource's physical id: one per stage,
// the same across updates (a new id would make CloudFormation delete the
// old one, which does nothing, but says "replaced").
const ConfigSeedID = "practice-api-stage-secrets"

// SeedConfig is the StageSecrets custom resource's handler on db: on
// Create and Update it makes each of the stage's secrets the table does
// not hold yet (store.SeedSecrets); on Delete it leaves them, with the
// table (a retained table keeps the keys its ids were derived with). On
// Create and Update it also stores the stage's default rate limit,
// perMinute (PublishStageLimit).
func SeedConfig(db *store.DB, perMinute int) cfn.CustomResourceFunction {
	return func(ctx context.Context, ev cfn.Event) (string, map[string]any, error) {
		if ev.RequestType == cfn.RequestDelete {
			slog.InfoContext(ctx, "stage secrets left in place", "request", ev.RequestType)
			return ConfigSeedID, nil, nil
		}
		made, err := db.SeedSecrets(ctx)
		if err != nil {
			return ConfigSeedID, nil, fmt.Errorf("seed the stage's secrets: %w", err)
		}
		if err := PublishStageLimit(ctx, db, perMinute); err != nil {
			return ConfigSeedID, nil, fmt.Errorf("store the stage's default rate limit: %w", err)
		}
		slog.InfoContext(ctx, "stage secrets seeded", "request", ev.RequestType, "made", made, "kept", len(store.ConfigSecrets)-len(made))
		return ConfigSeedID, map[string]any{"Made": len(made)}, nil
	}
}

// StartConfigSeed serves SeedConfig as a Lambda, answering CloudFormation
// at the request's ResponseURL (aws-lambda-go's cfn.LambdaWrap).
func StartConfigSeed() {
	var level slog.LevelVar
	log := JSONLogs(&level)
	perMinute := 0
	db, err := func() (*store.DB, error) {
		cfg, err := config.FromEnv()
		if err != nil {
			return nil, err
		}
		level.Set(cfg.LogLevel)
		perMinute = cfg.RateLimitPerMinute
		ctx, cancel := context.WithTimeout(context.Background(), StartupTimeout)
		defer cancel()
		return store.New(ctx, StoreConfig(cfg))
	}()
	if err != nil {
		log.Error("cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(cfn.LambdaWrap(SeedConfig(db, perMinute)))
}

// PublishStageLimit stores perMinute as the stage's default rate limit in
// the table (auth.Store.PublishDefaultLimit: a read, and a write only on a
// change), where scripts/admin reads it to count keys against an
// organisation's ceiling. On AWS only configseed may write CONFIG, so the
// deploy does it; the devserver does it at start, on its own table.
func PublishStageLimit(ctx context.Context, db *store.DB, perMinute int) error {
	return auth.NewStore(db, perMinute).PublishDefaultLimit(ctx)
}
