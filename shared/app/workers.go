package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
)

// Workers are the background jobs: the outbox dispatcher and the consumers
// of its queues.
type Workers struct {
	Dispatcher *outbox.Dispatcher
	Enricher   *party.Enricher
}

// NewWorkers wires the jobs on db with the given queues. COMPANY_REGISTER_URL
// names the company register (unset: enrichment is skipped) and
// ENRICHMENT_RETRY_SCHEDULE its retry pauses (default 10s,1m,5m,15m).
func NewWorkers(db *store.DB, enrichment queue.Queue) (*Workers, error) {
	schedule, err := ParseSchedule(os.Getenv("ENRICHMENT_RETRY_SCHEDULE"), party.DefaultEnrichSchedule)
	if err != nil {
		return nil, fmt.Errorf("ENRICHMENT_RETRY_SCHEDULE: %w", err)
	}
	return &Workers{
		Dispatcher: &outbox.Dispatcher{DB: db, Routes: map[string][]queue.Queue{outbox.CompanyCreated: {enrichment}}},
		Enricher: &party.Enricher{Store: party.NewStore(db), Register: os.Getenv("COMPANY_REGISTER_URL"),
			Queue: enrichment, Schedule: schedule},
	}, nil
}

// ParseSchedule reads comma-separated Go durations, each at most 15
// minutes (an SQS delay); empty gives def.
func ParseSchedule(v string, def []time.Duration) ([]time.Duration, error) {
	if strings.TrimSpace(v) == "" {
		return def, nil
	}
	var out []time.Duration
	for _, p := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q is not a duration such as 30s or 2m", p)
		}
		out = append(out, d)
	}
	return out, nil
}

// SQSQueue binds the queue at url; SQS_ENDPOINT overrides the endpoint
// (LocalStack, moto).
func SQSQueue(ctx context.Context, url string) (*queue.SQS, error) {
	if url == "" {
		return nil, fmt.Errorf("queue URL is not set")
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if ep := os.Getenv("SQS_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	return queue.NewSQS(client, url), nil
}

// LoadWorkers builds the Workers of a Lambda from the environment: the
// table, and ENRICHMENT_QUEUE_URL. It exits the process on failure, as a
// cold start that cannot wire itself can do nothing else.
func LoadWorkers() *Workers {
	JSONLogs()
	ctx := context.Background()
	w, err := func() (*Workers, error) {
		db, err := store.New(ctx, StoreConfigFromEnv())
		if err != nil {
			return nil, err
		}
		q, err := SQSQueue(ctx, os.Getenv("ENRICHMENT_QUEUE_URL"))
		if err != nil {
			return nil, fmt.Errorf("ENRICHMENT_QUEUE_URL: %w", err)
		}
		return NewWorkers(db, q)
	}()
	if err != nil {
		slog.Error("cold start failed", "err", err)
		os.Exit(1)
	}
	return w
}
