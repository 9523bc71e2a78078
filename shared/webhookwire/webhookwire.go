// Package webhookwire wires webhook delivery alone, from a process's
// typed configuration: the endpoints' store (with its secret box and event
// feed settings), the receivers' HTTP client, the retry schedule and the
// delivery queue. The webhooks API function needs this (manual retries and
// replays feed the delivery queue; signing secrets are sealed with KMS)
// and no other worker, so it links this package and not package app.
//
// The delivery worker is wired through it too (app.NewDeliverer), so a
// retry or replay the webhooks function queues is sent as it expects.
package webhookwire

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/practice-api/practice-api/shared/awsenv"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/queue/sqsqueue"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhook"
)

// NewDeliverer wires webhook delivery alone on db and the deliveries queue:
// the endpoints' store (with its secret box and event feed settings), the
// receivers' HTTP client and the retry schedule.
func NewDeliverer(ctx context.Context, db *store.DB, deliveries queue.Queue, cfg config.Config) (*webhook.Deliverer, error) {
	client, err := webhook.NewHTTPClient(cfg.WebhookCAFile, cfg.WebhookAllowPrivateTargets)
	if err != nil {
		return nil, err
	}
	endpoints := webhook.NewStore(db, cfg.WebhookAllowPrivateTargets)
	if endpoints.Box, err = SecretBox(ctx, cfg); err != nil {
		return nil, err
	}
	endpoints.FeedSettle, endpoints.FeedRetention = cfg.EventFeedSettle, cfg.EventRetention
	return &webhook.Deliverer{Store: endpoints, Queue: deliveries, Schedule: cfg.WebhookRetrySchedule, Client: client, ClaimLease: cfg.WebhookClaimLease,
		EndpointConcurrency: cfg.WebhookEndpointConcurrency, ReplaysPerHour: cfg.WebhookReplaysPerHour, Stage: cfg.Stage}, nil
}

// SecretBox is the KMS envelope for webhook signing secrets when
// WEBHOOK_SECRETS_KEY_ARN names a key (protected stages' customer-managed
// key; KMS_ENDPOINT overrides the endpoint for moto or LocalStack), and nil
// otherwise: the store then seals with a key kept in the table.
func SecretBox(ctx context.Context, cfg config.Config) (webhook.SecretBox, error) {
	if cfg.WebhookSecretsKeyARN == "" {
		return nil, nil
	}
	awsCfg, err := awsenv.Load("", cfg.KMSEndpoint != "") // what Lambda gives the function (awsenv)
	if err != nil {
		return nil, err
	}
	client := kms.NewFromConfig(awsCfg, func(o *kms.Options) {
		if cfg.KMSEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.KMSEndpoint)
		}
		o.APIOptions = append(o.APIOptions, store.ClassifyErrors) // its failures reach the edge: Unavailable or Internal
	})
	return &webhook.KMSBox{Client: client, KeyID: cfg.WebhookSecretsKeyARN}, nil
}

// SQSQueue binds the queue at url; SQS_ENDPOINT overrides the endpoint
// (LocalStack, moto, localcloud's queue server).
func SQSQueue(ctx context.Context, cfg config.Config, url string) (*sqsqueue.SQS, error) {
	if url == "" {
		return nil, fmt.Errorf("queue URL is not set")
	}
	awsCfg, err := awsenv.Load("", cfg.SQSEndpoint != "") // what Lambda gives the function (awsenv)
	if err != nil {
		return nil, err
	}
	client := sqs.NewFromConfig(awsCfg, func(o *sqs.Options) {
		if cfg.SQSEndpoint != "" {
			o.BaseEndpoint = aws.String(cfg.SQSEndpoint)
		}
		o.APIOptions = append(o.APIOptions, store.ClassifyErrors) // its failures reach the edge: Unavailable or Internal
	})
	return sqsqueue.New(client, url), nil
}

// DelivererOn is NewDeliverer on the SQS queue DELIVERY_QUEUE_URL names.
func DelivererOn(ctx context.Context, db *store.DB, cfg config.Config) (*webhook.Deliverer, error) {
	dq, err := SQSQueue(ctx, cfg, cfg.DeliveryQueueURL)
	if err != nil {
		return nil, fmt.Errorf("DELIVERY_QUEUE_URL: %w", err)
	}
	return NewDeliverer(ctx, db, dq, cfg)
}
