// Package listing is what a list request is, as the edge (httpapi) reads
// it from a query string and the store runs it: filters, page size, where
// to resume, the batch-read limit, and the layout of stored timestamps
// (which time filters compare with). The store's own names for them
// (store.ListRequest, store.StartKey, store.TimeLayout, store.MaxBatchRead)
// are these, so domain packages keep writing those.
//
// It imports nothing of ours and no AWS SDK: the edge links it instead of
// the store, so a function that serves no store (meta) links no DynamoDB
// client (functions/deps_test.go).
package listing

import "time"

// StartKey is where a listing resumes: the key attributes (table and index)
// of the last item returned. All key attributes of the table are strings.
type StartKey map[string]string

// Request is a validated list call as a domain package's List method
// takes it: filters, page size and where to resume (the edge's ServeList
// reads it from the query string).
type Request[F comparable] struct {
	Filter  F
	PerPage int
	After   StartKey
}

// MaxBatchRead is the most keys one BatchGetItem reads (DynamoDB's limit:
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html),
// and so the most ids one list request takes.
const MaxBatchRead = 100

// TimeLayout is the fixed-width UTC form used for every timestamp in keys and
// responses, so that string order is time order.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// FormatTime renders t in TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }
