// Package app wires the service's workers from a process's typed
// configuration (package config): the outbox dispatcher, the consumers of
// its queues (enrichment, webhook delivery), the synthetic check, the
// release check and the stage's secrets. The worker Lambdas, the local
// runtimes and the admin tool call it once at start. The API's functions
// do not link it: they are wired by package apiapp (and lambdahttp), so
// that none of them carries the workers' clients (SQS, KMS, Secrets
// Manager, CodeDeploy).
package app

import (
	"log/slog"

	"github.com/practice-api/practice-api/shared/apiapp"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/lambdahttp"
	"github.com/practice-api/practice-api/shared/store"
)

// StoreConfig is the store's part of cfg (apiapp.StoreConfig).
func StoreConfig(cfg config.Config) store.Config { return apiapp.StoreConfig(cfg) }

// JSONLogs is the process's logger, redacted JSON lines to stderr at level
// and above, made slog's default too (lambdahttp.JSONLogs).
func JSONLogs(level slog.Leveler) *slog.Logger { return lambdahttp.JSONLogs(level) }

// StartupTimeout bounds a worker's cold start, as an API function's
// (lambdahttp.StartupTimeout).
const StartupTimeout = lambdahttp.StartupTimeout
