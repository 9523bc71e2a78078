package app_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/app"
	"github.com/practice-api/practice-api/shared/config"
	"github.com/practice-api/practice-api/shared/queue"
	"github.com/practice-api/practice-api/shared/store"
	"github.com/practice-api/practice-api/shared/webhookwire"
)

// TestTheWebhooksFunctionWiresDeliveryAsTheWorkers: the webhooks API
// function wires delivery through webhookwire (so that it does not link
// the workers' package), the delivery worker through app.NewDeliverer; a
// retry or replay queued by the one must be sent by the other as it would
// have sent it, so the two build the same Deliverer from the same settings
// (every field, down to the receivers' client and the secret box; only
// functions are compared by presence), with and without a KMS key.
func TestTheWebhooksFunctionWiresDeliveryAsTheWorkers(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-north-1")
	ctx := context.Background()
	db, err := store.New(ctx, store.Config{TableName: "t", Endpoint: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	q := queue.NewMemory(time.Minute)
	for _, kv := range []map[string]string{
		{},
		{"WEBHOOK_RETRY_SCHEDULE": "1s,2s", "WEBHOOK_CLAIM_LEASE": "5s", "WEBHOOK_ENDPOINT_CONCURRENCY": "3", "WEBHOOK_REPLAYS_PER_HOUR": "7",
			"WEBHOOK_ALLOW_PRIVATE_TARGETS": "1", "EVENT_FEED_SETTLE": "1s", "EVENT_RETENTION": "2h",
			"WEBHOOK_SECRETS_KEY_ARN": "arn:aws:kms:eu-north-1:111122223333:key/k", "KMS_ENDPOINT": "http://127.0.0.1:9"},
	} {
		cfg, err := config.Load(func(k string) (string, bool) { v, ok := kv[k]; return v, ok })
		if err != nil {
			t.Fatal(err)
		}
		worker, err := app.NewDeliverer(ctx, db, q, cfg)
		if err != nil {
			t.Fatal(err)
		}
		api, err := webhookwire.NewDeliverer(ctx, db, q, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if path, ok := same(reflect.ValueOf(worker), reflect.ValueOf(api), "Deliverer", 0); !ok {
			t.Errorf("with %v: app.NewDeliverer and webhookwire.NewDeliverer differ at %s", kv, path)
		}
	}
}

// same compares a and b field by field (functions by presence, pointers
// by what they point to), to a bounded depth; it returns where they
// first differ.
func same(a, b reflect.Value, path string, depth int) (string, bool) {
	if a.IsValid() != b.IsValid() {
		return path, false
	}
	if !a.IsValid() || depth > 12 {
		return "", true
	}
	if a.Type() != b.Type() {
		return path + " (type " + a.Type().String() + " vs " + b.Type().String() + ")", false
	}
	switch a.Kind() {
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return path, a.IsNil() == b.IsNil()
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() || a.Pointer() == b.Pointer() {
			return path, a.IsNil() == b.IsNil()
		}
		return same(a.Elem(), b.Elem(), path, depth+1)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return path, a.IsNil() == b.IsNil()
		}
		return same(a.Elem(), b.Elem(), path, depth+1)
	case reflect.Struct:
		for i := range a.NumField() {
			if p, ok := same(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name, depth+1); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return path + " (length)", false
		}
		for i := range a.Len() {
			if p, ok := same(a.Index(i), b.Index(i), path+"[]", depth+1); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Map:
		if a.Len() != b.Len() {
			return path + " (length)", false
		}
		for _, k := range a.MapKeys() {
			if p, ok := same(a.MapIndex(k), b.MapIndex(k), path+"[key]", depth+1); !ok {
				return p, false
			}
		}
		return "", true
	case reflect.Bool:
		return path, a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return path, a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return path, a.Uint() == b.Uint()
	case reflect.Float32, reflect.Float64:
		return path, a.Float() == b.Float()
	case reflect.String:
		return path, a.String() == b.String()
	}
	return "", true
}
