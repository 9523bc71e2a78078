// Package store holds the DynamoDB plumbing shared by every domain package:
// the client, the single-table schema, key helpers, error classes and the
// page-filling Query loop. Domain packages own their item shapes.
package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/practice-api/practice-api/shared/awsenv"
	"github.com/practice-api/practice-api/shared/clock"
)

// Config says which table to use and, for local or emulated stores, where
// the DynamoDB-compatible endpoint is.
type Config struct {
	TableName string
	// Endpoint, when set, is used as the client's BaseEndpoint and static
	// dummy credentials are accepted (DynamoDB Local, LocalStack, moto).
	Endpoint string
	// Region defaults to the environment's (AWS_REGION), or us-east-1 for
	// local endpoints.
	Region string
	// AWS, when set, is the SDK configuration the client is built on: a
	// tool that talks to AWS as its operator (a profile, SSO) loads it
	// with the SDK's whole chain (config.LoadDefaultConfig). Unset, New
	// reads the environment alone (package awsenv: what AWS Lambda gives a
	// function), so that no function links the chain (about 1.9 MB).
	AWS *aws.Config
	// APIOptions are extra smithy middleware hooks (tests count round trips with them).
	APIOptions []func(*middleware.Stack) error
	// Retryer, when set, replaces the SDK's standard retryer (tests on
	// DynamoDB Local set one without the client-side retry quota).
	Retryer func() aws.Retryer
	// LocalFaults makes a call whose answer carries LocalFaultPanic panic
	// (LOCAL_FAULTS): only on an Endpoint on loopback (see LocalFaultPanic).
	LocalFaults bool
	// OutboxShards is the stage's shard count of the outbox's sweep index
	// (OUTBOX_SHARDS; the outbox's default when 0): DB.OutboxShards.
	OutboxShards int
}

// DB is a DynamoDB client bound to the service's single table.
type DB struct {
	Client *dynamodb.Client
	Table  string
	// Clock is the table's time: sequence numbers and migration leases
	// (the wall clock when nil; tests set a clock.Manual or the apitest
	// Env's clock). The parts built on a DB (dispatcher, deliverer, queue,
	// enricher) take a Clock of their own.
	Clock clock.Clock

	// OutboxShards is how many partitions of the sweep index the outbox
	// spreads pending events (and webhook claims) over on this table: the
	// stage's OUTBOX_SHARDS, which every process that writes or sweeps
	// events must agree on (the outbox's default when 0; outbox.ShardsOf).
	OutboxShards int

	lastSeq atomic.Int64
}

// Sequence is a sequence number: the clock's Unix microseconds, above
// every number this DB gave before (so a process's numbers only grow, and
// two of its items never share one). Numbers of different processes may
// meet in one microsecond; the item's key condition then refuses one, and
// its transaction takes another (TxBuilder.PutSequenced). Sixteen digits
// until the year 2286: a JSON number any reader holds exactly.
func (db *DB) Sequence() int64 {
	t := db.Now().UnixMicro()
	for {
		last := db.lastSeq.Load()
		next := max(t, last+1)
		if db.lastSeq.CompareAndSwap(last, next) {
			return next
		}
	}
}

// Now is the time on the DB's clock (the wall clock when Clock is nil).
func (db *DB) Now() time.Time { return clock.Or(db.Clock).Now() }

// New builds a DB from cfg. The client is built once per process and shared.
func New(ctx context.Context, cfg Config) (*DB, error) {
	if cfg.TableName == "" {
		return nil, fmt.Errorf("store: table name is required")
	}
	if cfg.LocalFaults && !Loopback(cfg.Endpoint) {
		return nil, ErrLocalFaults
	}
	var awsCfg aws.Config
	if cfg.AWS != nil {
		awsCfg = *cfg.AWS
	} else {
		region := cfg.Region
		if cfg.Endpoint != "" && region == "" {
			region = "us-east-1"
		}
		// Local endpoints accept any credentials; do not make newcomers
		// set them (awsenv's "local" when the environment has none).
		var err error
		if awsCfg, err = awsenv.Load(region, cfg.Endpoint != ""); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	client := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			// DynamoDB Local sends no x-amz-crc32 on error answers, and the
			// SDK then checks the body against 0 and logs a warning for every
			// failed condition. AWS's DynamoDB (no Endpoint) keeps the check.
			o.DisableValidateResponseChecksum = true
		}
		o.APIOptions = append(o.APIOptions, cfg.APIOptions...)
		if cfg.LocalFaults {
			o.APIOptions = append(o.APIOptions, localFaults)
		}
		if cfg.Retryer != nil {
			o.Retryer = cfg.Retryer()
		}
		// Last, so that it runs first: it classes what the others return.
		o.APIOptions = append(o.APIOptions, ClassifyErrors)
	})
	return &DB{Client: client, Table: cfg.TableName, OutboxShards: cfg.OutboxShards}, nil
}
