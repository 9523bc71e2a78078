package outbox

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
)

// Written is what a process without a stream (the devserver) knows of the
// pending events it wrote itself: the shards they went to. Watch marks
// them as a DynamoDB client's writes succeed; Poll sweeps just those
// shards at once, instead of every shard after every request (the e2e
// suite on the devserver sent 22,068 requests to DynamoDB Local, 14,176 of
// them these sweeps' Queries).
type Written struct {
	mu     sync.Mutex
	shards map[int]bool
	wake   chan struct{}
}

// NewWritten is an empty Written.
func NewWritten() *Written {
	return &Written{shards: map[int]bool{}, wake: make(chan struct{}, 1)}
}

// Wake fires (it holds one signal) when a shard is marked.
func (w *Written) Wake() <-chan struct{} { return w.wake }

// Mark notes that a pending event went to shard.
func (w *Written) Mark(shard int) {
	w.mu.Lock()
	w.shards[shard] = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Take returns the shards marked since the last Take, in order, and
// forgets them.
func (w *Written) Take() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]int, 0, len(w.shards))
	for s := range w.shards {
		out = append(out, s)
	}
	clear(w.shards)
	slices.Sort(out)
	return out
}

// Watch is a DynamoDB client's API option (dynamodb.Options.APIOptions):
// after a PutItem, TransactWriteItems or BatchWriteItem succeeds, every
// pending event it put (an item whose GSI6PK is a PendingPK) is marked.
func (w *Written) Watch(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("outbox.Written",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleInitialize(ctx, in)
			if err == nil {
				for _, item := range putItems(in.Parameters) {
					if shard, ok := pendingShard(item); ok {
						w.Mark(shard)
					}
				}
			}
			return out, md, err
		}), middleware.After)
}

// putItems are the items a write call puts.
func putItems(params any) []map[string]ddbtypes.AttributeValue {
	var items []map[string]ddbtypes.AttributeValue
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		items = append(items, in.Item)
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			if it.Put != nil {
				items = append(items, it.Put.Item)
			}
		}
	case *dynamodb.BatchWriteItemInput:
		for _, reqs := range in.RequestItems {
			for _, r := range reqs {
				if r.PutRequest != nil {
					items = append(items, r.PutRequest.Item)
				}
			}
		}
	}
	return items
}

// pendingShard is the shard of a pending event's item.
func pendingShard(item map[string]ddbtypes.AttributeValue) (int, bool) {
	pk, ok := item["GSI6PK"].(*ddbtypes.AttributeValueMemberS)
	if !ok {
		return 0, false
	}
	rest, ok := strings.CutPrefix(pk.Value, PendingPK(0)[:len(PendingPK(0))-1])
	if !ok {
		return 0, false
	}
	shard, err := strconv.Atoi(rest)
	return shard, err == nil
}
