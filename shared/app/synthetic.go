package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/metrics"
	"github.com/practice-api/practice-api/shared/secretkey"
	"github.com/practice-api/practice-api/shared/smoke"
)

// Synthetic-check metrics: the checks run and those that failed, per
// stage. Its alarm treats a minute without them as failing (no check ran).
const (
	SyntheticChecks        = "SyntheticChecks"
	SyntheticCheckFailures = "SyntheticCheckFailures"
)

// SmokeKey is the source of the read-only key the synthetic and
// pre-traffic checks use when SMOKE_KEY_SECRET names a Secrets Manager
// secret, and nil otherwise (the checks that need a key are skipped).
func SmokeKey(ctx context.Context, cfg config.Config) (func(context.Context) (string, error), error) {
	if cfg.SmokeKeySecret == "" {
		return nil, nil
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) {
		if cfg.SecretsManagerEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SecretsManagerEndpoint)
		}
	})
	return (&secretkey.Key{Client: client, Name: cfg.SmokeKeySecret}).Get, nil
}

// SyntheticCheck runs the smoke checks (package smoke: read-only) against
// the stage at base, as an integrator would call it, and records the
// result as metrics (SyntheticChecks, SyntheticCheckFailures) on one log
// line with every check's outcome: at ERROR when one failed. A key that
// cannot be read fails the run (its checks are not skipped silently). The
// line goes to m.
func SyntheticCheck(base string, key func(context.Context) (string, error), client *http.Client, m Metrics) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var out strings.Builder
		k, failed, checks := "", 0, 0
		var err error
		if key != nil {
			if k, err = key(ctx); err != nil {
				failed++
				out.WriteString("FAIL  read the smoke key: " + err.Error() + "\n")
			}
		}
		if err == nil {
			var n int
			if n, err = smoke.RunWith(ctx, client, base, k, &out); err != nil {
				failed++
				out.WriteString("FAIL  " + err.Error() + "\n")
			}
			failed += n
		}
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !strings.HasPrefix(l, "skip") && l != "" {
				checks++
			}
		}
		level := slog.LevelInfo
		if failed > 0 {
			level = slog.LevelError
		}
		metrics.EmitTo(ctx, m.log(), m.Stage, level, "synthetic check", map[string]int{"SyntheticChecks": checks, "SyntheticCheckFailures": failed},
			"base_url", base, "report", out.String())
		return nil // a failed check is its metric's to report: an invocation error would also page as the function's
	}
}

// StartSynthetic serves the scheduled synthetic check as a Lambda.
func StartSynthetic() {
	var level slog.LevelVar
	log := JSONLogs(&level)
	h, err := func() (func(context.Context) error, error) {
		cfg, err := config.FromEnv()
		if err != nil {
			return nil, err
		}
		if cfg.SyntheticBaseURL == "" {
			return nil, errors.New("SYNTHETIC_BASE_URL is not set")
		}
		level.Set(cfg.LogLevel)
		ctx, cancel := context.WithTimeout(context.Background(), StartupTimeout)
		defer cancel()
		key, err := SmokeKey(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return SyntheticCheck(cfg.SyntheticBaseURL, key, &http.Client{Timeout: 8 * time.Second}, Metrics{Log: log, Stage: cfg.Stage}), nil
	}()
	if err != nil {
		log.Error("cold start failed", "err", err)
		os.Exit(1)
	}
	lambda.Start(h)
}
