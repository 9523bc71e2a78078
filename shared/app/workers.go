package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/outbox"
	"github.com/practice-api/practice-api/shared/party"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/queue/sqsqueue"
	"github.com/practice-api/practice-api/shared/secretkey"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook"
	"github.com/practice-api/practice-api/shared/webhookwire"
)

// Workers are the background jobs: the outbox dispatcher and the consumers
// of its queues, and where they write their own metrics.
type Workers struct {
	Dispatcher *outbox.Dispatcher
	Enricher   *party.Enricher
	Deliverer  *webhook.Deliverer
	Metrics    Metrics
}

// NewWorkers wires the jobs on db with the given queues, as cfg says
// (config.Vars: the register, the retry schedules, the receivers' trust and
// private-target guard, the secrets' key, the outbox and the event feed),
// logging on log.
func NewWorkers(ctx context.Context, db *store.DB, enrichment, deliveries queue.Queue, cfg config.Config, log *slog.Logger) (*Workers, error) {
	d, err := NewDeliverer(ctx, db, deliveries, cfg)
	if err != nil {
		return nil, err
	}
	d.Log = log
	registerKey, err := RegisterKey(ctx, cfg)
	if err != nil {
		return nil, err
	}
	routes := map[outbox.Type][]outbox.Sink{outbox.CompanyEnrich: {enrichment}}
	fanout := &webhook.Fanout{Store: d.Store, Queue: deliveries}
	for _, t := range outbox.Types {
		routes[t] = []outbox.Sink{fanout}
	}
	return &Workers{
		Dispatcher: &outbox.Dispatcher{DB: db, Routes: routes, Retention: cfg.OutboxRetention, FeedRetention: cfg.EventRetention},
		Enricher: &party.Enricher{Store: party.NewStore(db), Register: cfg.CompanyRegisterURL, RegisterKey: registerKey,
			HTTP: party.RegisterClient(cfg.WebhookAllowPrivateTargets), Queue: enrichment, Schedule: cfg.EnrichmentRetrySchedule, Log: log},
		Deliverer: d,
		Metrics:   Metrics{Log: log, Stage: cfg.Stage},
	}, nil
}

// NewDeliverer wires webhook delivery alone on db and the deliveries queue:
// the endpoints' store (with its secret box and event feed settings), the
// receivers' HTTP client and the retry schedule (webhookwire.NewDeliverer,
// which the webhooks function calls without linking the other workers).
func NewDeliverer(ctx context.Context, db *store.DB, deliveries queue.Queue, cfg config.Config) (*webhook.Deliverer, error) {
	return webhookwire.NewDeliverer(ctx, db, deliveries, cfg)
}

// SecretBox is the KMS envelope for webhook signing secrets when
// WEBHOOK_SECRETS_KEY_ARN names a key (protected stages' customer-managed
// key; KMS_ENDPOINT overrides the endpoint for moto or LocalStack), and nil
// otherwise: the store then seals with a key kept in the table.
func SecretBox(ctx context.Context, cfg config.Config) (webhook.SecretBox, error) {
	return webhookwire.SecretBox(ctx, cfg)
}

// RegisterKey is the source of the company register's API key when
// COMPANY_REGISTER_KEY_SECRET names a Secrets Manager secret
// (SECRETS_MANAGER_ENDPOINT overrides the endpoint), and nil otherwise.
func RegisterKey(ctx context.Context, cfg config.Config) (func(context.Context) (string, error), error) {
	if cfg.CompanyRegisterKeySecret == "" {
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
	return (&secretkey.Key{Client: client, Name: cfg.CompanyRegisterKeySecret}).Get, nil
}

// SQSQueue binds the queue at url; SQS_ENDPOINT overrides the endpoint
// (LocalStack, moto, localcloud's queue server).
func SQSQueue(ctx context.Context, cfg config.Config, url string) (*sqsqueue.SQS, error) {
	return webhookwire.SQSQueue(ctx, cfg, url)
}

// WorkersOn builds the Workers on db with the SQS queues cfg names
// (ENRICHMENT_QUEUE_URL, DELIVERY_QUEUE_URL), logging on log.
func WorkersOn(ctx context.Context, db *store.DB, cfg config.Config, log *slog.Logger) (*Workers, error) {
	q, err := SQSQueue(ctx, cfg, cfg.EnrichmentQueueURL)
	if err != nil {
		return nil, fmt.Errorf("ENRICHMENT_QUEUE_URL: %w", err)
	}
	dq, err := SQSQueue(ctx, cfg, cfg.DeliveryQueueURL)
	if err != nil {
		return nil, fmt.Errorf("DELIVERY_QUEUE_URL: %w", err)
	}
	return NewWorkers(ctx, db, q, dq, cfg, log)
}

// DelivererOn is NewDeliverer on the SQS queue DELIVERY_QUEUE_URL names.
func DelivererOn(ctx context.Context, db *store.DB, cfg config.Config) (*webhook.Deliverer, error) {
	return webhookwire.DelivererOn(ctx, db, cfg)
}

// LoadWorkers builds the Workers of a worker Lambda: the environment is
// read once, into a Config, and everything is wired within StartupTimeout.
// It exits the process on failure, as a cold start that cannot wire itself
// can do nothing else.
func LoadWorkers() *Workers {
	var level slog.LevelVar
	log := JSONLogs(&level)
	w, err := func() (*Workers, error) {
		cfg, err := config.FromEnv()
		if err != nil {
			return nil, err
		}
		level.Set(cfg.LogLevel)
		ctx, cancel := context.WithTimeout(context.Background(), StartupTimeout)
		defer cancel()
		db, err := store.New(ctx, StoreConfig(cfg))
		if err != nil {
			return nil, err
		}
		return WorkersOn(ctx, db, cfg, log)
	}()
	if err != nil {
		log.Error("cold start failed", "err", err)
		os.Exit(1)
	}
	return w
}
