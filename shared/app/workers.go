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
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook"
)

// Workers are the background jobs: the outbox dispatcher and the consumers
// of its queues.
type Workers struct {
	Dispatcher *outbox.Dispatcher
	Enricher   *party.Enricher
	Deliverer  *webhook.Deliverer
}

// NewWorkers wires the jobs on db with the given queues, from the
// environment: COMPANY_REGISTER_URL (unset: enrichment is skipped),
// ENRICHMENT_RETRY_SCHEDULE (default 10s,1m,5m,15m), WEBHOOK_RETRY_SCHEDULE
// (default 30s,2m,8m,30m: five attempts), WEBHOOK_CA_FILE (extra trusted
// roots) and WEBHOOK_ALLOW_PRIVATE_TARGETS ("1" admits loopback and private
// targets; default off), and the event feed's EVENT_FEED_SETTLE and
// EVENT_RETENTION (EventFeedFromEnv).
func NewWorkers(db *store.DB, enrichment, deliveries queue.Queue) (*Workers, error) {
	schedule, err := ParseSchedule(os.Getenv("ENRICHMENT_RETRY_SCHEDULE"), party.DefaultEnrichSchedule)
	if err != nil {
		return nil, fmt.Errorf("ENRICHMENT_RETRY_SCHEDULE: %w", err)
	}
	hooks, err := ParseSchedule(os.Getenv("WEBHOOK_RETRY_SCHEDULE"), webhook.DefaultSchedule)
	if err != nil {
		return nil, fmt.Errorf("WEBHOOK_RETRY_SCHEDULE: %w", err)
	}
	allowPrivate := os.Getenv("WEBHOOK_ALLOW_PRIVATE_TARGETS") == "1"
	client, err := webhook.NewHTTPClient(os.Getenv("WEBHOOK_CA_FILE"), allowPrivate)
	if err != nil {
		return nil, err
	}
	endpoints := webhook.NewStore(db, allowPrivate)
	if endpoints.Box, err = SecretBoxFromEnv(context.Background()); err != nil {
		return nil, err
	}
	if err := OutboxFromEnv(); err != nil {
		return nil, err
	}
	retention, err := OutboxRetentionFromEnv()
	if err != nil {
		return nil, err
	}
	if endpoints.FeedSettle, endpoints.FeedRetention, err = EventFeedFromEnv(); err != nil {
		return nil, err
	}
	routes := map[string][]outbox.Sink{outbox.CompanyCreated: {enrichment}}
	fanout := &webhook.Fanout{Store: endpoints, Queue: deliveries}
	for _, t := range outbox.Types {
		routes[t] = []outbox.Sink{fanout}
	}
	return &Workers{
		Dispatcher: &outbox.Dispatcher{DB: db, Routes: routes, Retention: retention, FeedRetention: endpoints.FeedRetention},
		Enricher: &party.Enricher{Store: party.NewStore(db), Register: os.Getenv("COMPANY_REGISTER_URL"),
			HTTP: party.RegisterClient(allowPrivate), Queue: enrichment, Schedule: schedule},
		Deliverer: &webhook.Deliverer{Store: endpoints, Queue: deliveries, Schedule: hooks, Client: client},
	}, nil
}

// EventFeedFromEnv reads EVENT_FEED_SETTLE (a Go duration from 0 to 1m;
// default 10s: how far behind now GET /events serves, at least twice
// store.SequenceWindow for its no-miss rule; less only for tests) and
// EVENT_RETENTION (a Go duration of 1h to 2160h; default 720h, 30 days:
// how long events are listed and replayable).
func EventFeedFromEnv() (settle, retention time.Duration, err error) {
	settle, retention = outbox.DefaultSettle, outbox.DefaultFeedRetention
	if v := os.Getenv("EVENT_FEED_SETTLE"); v != "" {
		if settle, err = time.ParseDuration(v); err != nil || settle < 0 || settle > time.Minute {
			return 0, 0, fmt.Errorf("EVENT_FEED_SETTLE must be a Go duration from 0s to 1m, such as 10s, got %q", v)
		}
	}
	if v := os.Getenv("EVENT_RETENTION"); v != "" {
		if retention, err = time.ParseDuration(v); err != nil || retention < time.Hour || retention > 90*24*time.Hour {
			return 0, 0, fmt.Errorf("EVENT_RETENTION must be a Go duration from 1h to 2160h (90 days), such as 720h, got %q", v)
		}
	}
	return settle, retention, nil
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

// SecretBoxFromEnv is the KMS envelope for webhook signing secrets when
// WEBHOOK_SECRETS_KEY_ARN names a key (protected stages' customer-managed
// key; KMS_ENDPOINT overrides the endpoint for moto or LocalStack), and nil
// otherwise: the store then seals with a key kept in the table.
func SecretBoxFromEnv(ctx context.Context) (webhook.SecretBox, error) {
	arn := os.Getenv("WEBHOOK_SECRETS_KEY_ARN")
	if arn == "" {
		return nil, nil
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	client := kms.NewFromConfig(cfg, func(o *kms.Options) {
		if ep := os.Getenv("KMS_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	return &webhook.KMSBox{Client: client, KeyID: arn}, nil
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

// WorkersOn builds the Workers on db with the SQS queues the environment
// names: ENRICHMENT_QUEUE_URL and DELIVERY_QUEUE_URL.
func WorkersOn(ctx context.Context, db *store.DB) (*Workers, error) {
	q, err := SQSQueue(ctx, os.Getenv("ENRICHMENT_QUEUE_URL"))
	if err != nil {
		return nil, fmt.Errorf("ENRICHMENT_QUEUE_URL: %w", err)
	}
	dq, err := SQSQueue(ctx, os.Getenv("DELIVERY_QUEUE_URL"))
	if err != nil {
		return nil, fmt.Errorf("DELIVERY_QUEUE_URL: %w", err)
	}
	return NewWorkers(db, q, dq)
}

// LoadWorkers builds the Workers of a worker Lambda from the environment.
// It exits the process on failure, as a cold start that cannot wire itself
// can do nothing else.
func LoadWorkers() *Workers {
	JSONLogs()
	ctx, cancel := context.WithTimeout(context.Background(), StartupTimeout)
	defer cancel()
	db, err := store.New(ctx, StoreConfigFromEnv())
	if err == nil {
		var w *Workers
		if w, err = WorkersOn(ctx, db); err == nil {
			return w
		}
	}
	slog.Error("cold start failed", "err", err)
	os.Exit(1)
	return nil
}
