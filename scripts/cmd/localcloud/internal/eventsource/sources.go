// Package eventsource runs Lambda's event source mappings: a DynamoDB
// stream (batches per shard, filters, retries, bisection, record age, the
// on-failure destination) and SQS queues (batches, the batching window,
// partial batch responses, maximum concurrency), with Lambda's filter
// patterns.
package eventsource

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/sqsserver"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
	"github.com/practice-api/practice-api/shared/clock"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/uuid"
)

// Function is a mapping's function (a lambda.Function).
type Function interface {
	Invoke(ctx context.Context, payload []byte, wait time.Duration) (lambda.Outcome, string, error)
	ARN() string
}

// Source is the queue a mapping polls (an sqsserver.Queue).
type Source interface {
	Receive(max int, visibility time.Duration) []sqsserver.Message
	Delete(receipt string) bool
	Woken() <-chan struct{} // a message may be visible
	Addr() stack.QueueAddr
}

// Destination takes what a mapping gives up on (an sqsserver.Queue).
type Destination interface {
	Send(body string, delay time.Duration) *sqsserver.Message
}

// StreamsAPI is what a Stream calls of DynamoDB Streams (a
// *dynamodbstreams.Client).
type StreamsAPI interface {
	DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, opts ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

// Stream is a DynamoDB stream event source mapping: it reads the
// table's stream from DynamoDB Local's Streams API, shard by shard and in
// order, keeps the records that pass the mapping's filters (the others are
// dropped, as Lambda drops them), and invokes the function with batches of
// up to BatchSize records, gathered for at most the batching window. A
// batch that fails is split in two when the mapping bisects, retried up to
// MaximumRetryAttempts, and then sent, as Lambda does, to the on-failure
// destination; records older than MaximumRecordAge go there unsent.
type Stream struct {
	Spec      stack.StreamMapping
	Fn        Function
	Client    StreamsAPI
	StreamArn string
	Filters   []Filter
	OnFailure Destination // nil: none
	Bell      *Bell       // rung when the table may have new records (nil: none)
}

// The stream's polling: Lambda polls each shard about four times a second
// (https://docs.aws.amazon.com/lambda/latest/dg/with-ddb.html); localcloud
// does so while a shard has records and for a while after, then, while it
// stays empty, waits twice as long after each empty read, up to idlePoll.
// A Bell rung when the table may have changed (an invocation ended: the
// gateway's, a queue's, a schedule's) cuts such a wait short and brings
// the shard back to Lambda's pace, never faster: the next read comes a
// quarter second after the last at the earliest, so a busy stack's rings
// add no reads. A write from outside the stack (scripts/admin, a test's
// own client) is read at the next poll, idlePoll at most after it. An
// idle stack reads each shard every 2 s instead of four times a second:
// the engine (DynamoDB Local) serves GetRecords on the CPU that make test
// shares.
const (
	busyPoll = 250 * time.Millisecond
	idlePoll = 2 * time.Second
)

// Bell wakes the stream pollers waiting out an idle shard: Ring wakes
// every waiter at once (a nil Bell never rings).
type Bell struct {
	mu sync.Mutex
	ch chan struct{}
}

// Ring wakes everyone waiting on the bell now.
func (b *Bell) Ring() {
	if b == nil {
		return
	}
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}

// rung is closed at the next Ring (nil, which never fires, for a nil Bell).
func (b *Bell) rung() <-chan struct{} {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (s *Stream) Run(ctx context.Context) {
	shards := map[string]bool{}
	first := true
	for ctx.Err() == nil {
		var start *string
		for {
			out, err := s.Client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(s.StreamArn), ExclusiveStartShardId: start})
			if err != nil {
				if ctx.Err() == nil {
					slog.Error("stream: describe", "err", err)
				}
				break
			}
			for _, sh := range out.StreamDescription.Shards {
				id := aws.ToString(sh.ShardId)
				if shards[id] {
					continue
				}
				shards[id] = true
				open := sh.SequenceNumberRange == nil || sh.SequenceNumberRange.EndingSequenceNumber == nil
				if first && !open {
					continue // closed before we started: LATEST skips it
				}
				pos := streamtypes.ShardIteratorTypeTrimHorizon // a shard that appeared while running: from its start
				if first && s.Spec.Start == "LATEST" {
					pos = streamtypes.ShardIteratorTypeLatest
				}
				go s.shard(ctx, id, pos)
			}
			if start = out.StreamDescription.LastEvaluatedShardId; start == nil {
				break
			}
		}
		first = false
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second): // new shards (splits) show up here
		}
	}
}

// shard reads one shard to its end (a closed shard) or until ctx ends.
func (s *Stream) shard(ctx context.Context, id string, pos streamtypes.ShardIteratorType) {
	it, err := s.Client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(s.StreamArn), ShardId: aws.String(id), ShardIteratorType: pos})
	if err != nil {
		if ctx.Err() == nil {
			slog.Error("stream: shard iterator", "shard", id, "err", err)
		}
		return
	}
	iter := it.ShardIterator
	var batch []map[string]any
	var batchStart time.Time
	wait := busyPoll
	for iter != nil && ctx.Err() == nil {
		rung := s.Bell.rung() // a ring from now on finds this read's end
		out, err := s.Client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
		if err != nil {
			if ctx.Err() == nil {
				slog.Error("stream: get records", "shard", id, "err", err)
				time.Sleep(time.Second)
			}
			continue
		}
		iter = out.NextShardIterator
		readAt := time.Now()
		for _, r := range out.Records {
			rec := s.eventRecord(r)
			if !passes(s.Filters, rec) {
				continue
			}
			if len(batch) == 0 {
				batchStart = time.Now()
			}
			batch = append(batch, rec)
			if len(batch) == s.Spec.BatchSize {
				s.deliver(ctx, id, batch)
				batch = nil
			}
		}
		if len(batch) > 0 && (time.Since(batchStart) >= s.Spec.Window || len(out.Records) == 0) {
			s.deliver(ctx, id, batch)
			batch = nil
		}
		if len(out.Records) > 0 {
			wait = busyPoll
			continue
		}
		select {
		case <-ctx.Done():
		case <-rung: // still no more often than Lambda's pace
			wait = busyPoll
			select {
			case <-ctx.Done():
			case <-time.After(busyPoll - time.Since(readAt)):
			}
		case <-time.After(wait):
			wait = min(2*wait, idlePoll)
		}
	}
	if len(batch) > 0 && ctx.Err() == nil {
		s.deliver(ctx, id, batch)
	}
}

// deliver invokes the function with a batch of one shard's records, with
// the mapping's retries, bisection and record age.
func (s *Stream) deliver(ctx context.Context, shard string, batch []map[string]any) {
	if s.Spec.MaxAge > 0 {
		var fresh, expired []map[string]any
		for _, r := range batch {
			created, _ := r["dynamodb"].(map[string]any)["ApproximateCreationDateTime"].(float64)
			if time.Since(time.Unix(int64(created), 0)) > s.Spec.MaxAge {
				expired = append(expired, r)
				continue
			}
			fresh = append(fresh, r)
		}
		if len(expired) > 0 {
			s.fail(shard, expired, "RecordAgeExceeded", 0, nil)
		}
		batch = fresh
	}
	if len(batch) == 0 {
		return
	}
	for attempt := 0; ctx.Err() == nil; attempt++ {
		payload, _ := json.Marshal(map[string]any{"Records": batch})
		o, _, err := s.Fn.Invoke(ctx, payload, 0)
		if err == nil && o.Status == "ok" {
			return
		}
		if s.Spec.Retries >= 0 && attempt >= s.Spec.Retries {
			s.fail(shard, batch, "RetryAttemptsExhausted", attempt+1, &o)
			return
		}
		if s.Spec.Bisect && len(batch) > 1 {
			half := len(batch) / 2
			s.deliver(ctx, shard, batch[:half])
			s.deliver(ctx, shard, batch[half:])
			return
		}
		time.Sleep(time.Duration(min(attempt+1, 5)) * 200 * time.Millisecond)
	}
}

// fail sends a batch the mapping gave up on to its on-failure destination:
// one record per batch, in Lambda's shape for stream failures (the shard,
// the batch's first and last sequence numbers and arrival times, its size,
// how often it was invoked and how the last invocation ended). The records
// themselves are not in it: they are read back from the stream by those
// numbers while the stream keeps them.
func (s *Stream) fail(shard string, batch []map[string]any, condition string, invocations int, last *lambda.Outcome) {
	if s.OnFailure == nil {
		slog.Warn("stream: a batch was given up on, and the mapping has no destination", "condition", condition, "shard", shard, "records", len(batch))
		return
	}
	ddb := func(r map[string]any) map[string]any { return r["dynamodb"].(map[string]any) }
	arrival := func(r map[string]any) string {
		created, _ := ddb(r)["ApproximateCreationDateTime"].(float64)
		return time.Unix(int64(created), 0).UTC().Format(time.RFC3339)
	}
	first, lastRec := batch[0], batch[len(batch)-1]
	record := map[string]any{
		"requestContext": map[string]any{"requestId": uuid.NewString(), "functionArn": s.Fn.ARN(), "condition": condition, "approximateInvokeCount": invocations},
		"version":        "1.0", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"DDBStreamBatchInfo": map[string]any{"shardId": shard, "startSequenceNumber": ddb(first)["SequenceNumber"], "endSequenceNumber": ddb(lastRec)["SequenceNumber"],
			"approximateArrivalOfFirstRecord": arrival(first), "approximateArrivalOfLastRecord": arrival(lastRec),
			"batchSize": len(batch), "streamArn": s.StreamArn},
	}
	if last != nil {
		rc := map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
		if last.Status == "" { // the invocation itself failed (throttled, could not start)
			rc = map[string]any{"statusCode": 429, "executedVersion": "$LATEST", "functionError": ""}
		}
		record["responseContext"] = rc
	}
	body, _ := json.Marshal(record)
	s.OnFailure.Send(string(body), 0)
}

// eventRecord is a stream record as Lambda hands it to a function.
func (s *Stream) eventRecord(r streamtypes.Record) map[string]any {
	d := r.Dynamodb
	ddb := map[string]any{"StreamViewType": string(d.StreamViewType), "SequenceNumber": aws.ToString(d.SequenceNumber), "SizeBytes": aws.ToInt64(d.SizeBytes)}
	if d.ApproximateCreationDateTime != nil {
		ddb["ApproximateCreationDateTime"] = float64(d.ApproximateCreationDateTime.Unix())
	}
	for name, img := range map[string]map[string]streamtypes.AttributeValue{"Keys": d.Keys, "NewImage": d.NewImage, "OldImage": d.OldImage} {
		if img != nil {
			ddb[name] = lambdaImage(img)
		}
	}
	return map[string]any{"eventID": aws.ToString(r.EventID), "eventName": string(r.EventName), "eventVersion": aws.ToString(r.EventVersion),
		"eventSource": "aws:dynamodb", "awsRegion": stack.Region, "eventSourceARN": s.StreamArn, "dynamodb": ddb}
}

func lambdaImage(img map[string]streamtypes.AttributeValue) map[string]any {
	out := make(map[string]any, len(img))
	for k, v := range img {
		out[k] = lambdaValue(v)
	}
	return out
}

// lambdaValue is a stream attribute value in the JSON of Lambda's event.
func lambdaValue(v streamtypes.AttributeValue) map[string]any {
	switch t := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return map[string]any{"S": t.Value}
	case *streamtypes.AttributeValueMemberN:
		return map[string]any{"N": t.Value}
	case *streamtypes.AttributeValueMemberB:
		return map[string]any{"B": base64.StdEncoding.EncodeToString(t.Value)}
	case *streamtypes.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": t.Value}
	case *streamtypes.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *streamtypes.AttributeValueMemberSS:
		return map[string]any{"SS": t.Value}
	case *streamtypes.AttributeValueMemberNS:
		return map[string]any{"NS": t.Value}
	case *streamtypes.AttributeValueMemberBS:
		bs := make([]string, len(t.Value))
		for i, b := range t.Value {
			bs[i] = base64.StdEncoding.EncodeToString(b)
		}
		return map[string]any{"BS": bs}
	case *streamtypes.AttributeValueMemberM:
		return map[string]any{"M": lambdaImage(t.Value)}
	case *streamtypes.AttributeValueMemberL:
		l := make([]any, len(t.Value))
		for i, e := range t.Value {
			l[i] = lambdaValue(e)
		}
		return map[string]any{"L": l}
	}
	return map[string]any{"NULL": true}
}

// Queue is an SQS event source mapping: up to MaximumConcurrency
// batches in flight, each of up to BatchSize messages; a message the
// function reports as failed (ReportBatchItemFailures), or every message
// of a batch whose invocation failed, is left to come back after the
// queue's visibility timeout, and to its dead-letter queue after
// maxReceiveCount receives; the others are deleted.
type Queue struct {
	Spec    stack.QueueMapping
	Fn      Function
	Queue   Source
	Filters []Filter
	// Clock is the time the batching window passes on (nil: the wall
	// clock): give it the queue's, so that a test moving a manual clock
	// moves both. On a manual clock a window ends only when it is moved.
	Clock clock.Clock
}

func (s *Queue) Run(ctx context.Context) {
	sem := make(chan struct{}, s.Spec.MaxConcurrency)
	var wg sync.WaitGroup
	defer wg.Wait()
	for ctx.Err() == nil {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		msgs := s.gather(ctx)
		if len(msgs) == 0 {
			<-sem
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			s.invoke(ctx, msgs)
		})
	}
}

// gather receives one batch, waiting for messages and, within the
// batching window (on the mapping's clock, from the first message
// gathered), for a fuller batch: a window of 0 takes what is there.
func (s *Queue) gather(ctx context.Context) []sqsserver.Message {
	clk := clock.Or(s.Clock)
	var msgs []sqsserver.Message
	var deadline time.Time // the window's end, once a message is gathered
	var window clock.Timer
	var windowEnds <-chan time.Time
	defer func() {
		if window != nil {
			window.Stop()
		}
	}()
	// A message whose delay or visibility timeout ended does not wake the
	// mapping: it looks again every 100 ms of wall time.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		got := s.Queue.Receive(s.Spec.BatchSize-len(msgs), -1)
		if len(msgs) == 0 && len(got) > 0 && s.Spec.Window > 0 {
			deadline = clk.Now().Add(s.Spec.Window) // before the timer: it fires at the deadline or after
			window, windowEnds = clk.NewTimer(s.Spec.Window)
		}
		msgs = append(msgs, got...)
		if len(msgs) == s.Spec.BatchSize || (len(msgs) > 0 && !clk.Now().Before(deadline)) {
			return msgs
		}
		select {
		case <-ctx.Done():
		case <-s.Queue.Woken():
		case <-windowEnds:
		case <-tick.C:
		}
	}
	return msgs
}

func (s *Queue) invoke(ctx context.Context, msgs []sqsserver.Message) {
	var records []map[string]any
	var passed []sqsserver.Message
	for _, m := range msgs {
		attrs := map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.Receives), "SentTimestamp": strconv.FormatInt(m.Sent.UnixMilli(), 10),
			"SenderId": stack.Account, "ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.FirstReceive.UnixMilli(), 10)}
		if m.Group != "" {
			attrs["MessageGroupId"] = m.Group // a fair queue's tenant, as Lambda passes it on
		}
		rec := map[string]any{"messageId": m.ID, "receiptHandle": m.Receipt, "body": m.Body, "md5OfBody": m.MD5,
			"attributes":        attrs,
			"messageAttributes": map[string]any{}, "eventSource": "aws:sqs", "eventSourceARN": s.Queue.Addr().ARN, "awsRegion": stack.Region}
		if len(s.Filters) > 0 {
			view := map[string]any{"body": m.Body}
			var body any
			if json.Unmarshal([]byte(m.Body), &body) == nil {
				view["body"] = body
			}
			if !passes(s.Filters, view) {
				s.Queue.Delete(m.Receipt) // Lambda deletes what its filters drop
				continue
			}
		}
		records, passed = append(records, rec), append(passed, m)
	}
	if len(records) == 0 {
		return
	}
	payload, _ := json.Marshal(map[string]any{"Records": records})
	o, _, err := s.Fn.Invoke(ctx, payload, 0)
	if err != nil || o.Status != "ok" {
		return // the whole batch comes back after the visibility timeout
	}
	failed := map[string]bool{}
	if s.Spec.ReportFailures {
		var resp struct {
			Failures []struct {
				ID string `json:"itemIdentifier"`
			} `json:"batchItemFailures"`
		}
		if json.Unmarshal(o.Body, &resp) == nil {
			inBatch := map[string]bool{}
			for _, m := range passed {
				inBatch[m.ID] = true
			}
			for _, f := range resp.Failures {
				if !inBatch[f.ID] {
					return // an identifier not in the batch: Lambda fails the whole batch
				}
				failed[f.ID] = true
			}
		}
	}
	for _, m := range passed {
		if !failed[m.ID] {
			s.Queue.Delete(m.Receipt)
		}
	}
}
