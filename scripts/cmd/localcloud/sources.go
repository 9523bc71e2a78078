package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/google/uuid"
)

// streamSource is a DynamoDB stream event source mapping: it reads the
// table's stream from DynamoDB Local's Streams API, shard by shard and in
// order, keeps the records that pass the mapping's filters (the others are
// dropped, as Lambda drops them), and invokes the function with batches of
// up to BatchSize records, gathered for at most the batching window. A
// batch that fails is split in two when the mapping bisects, retried up to
// MaximumRetryAttempts, and then sent, as Lambda does, to the on-failure
// destination; records older than MaximumRecordAge go there unsent.
type streamSource struct {
	spec      streamMappingSpec
	fn        *function
	client    *dynamodbstreams.Client
	streamArn string
	filters   []filter
	onFailure *sqsQueue
}

func (s *streamSource) run(ctx context.Context) {
	shards := map[string]bool{}
	first := true
	for ctx.Err() == nil {
		var start *string
		for {
			out, err := s.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(s.streamArn), ExclusiveStartShardId: start})
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
				if first && s.spec.start == "LATEST" {
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
func (s *streamSource) shard(ctx context.Context, id string, pos streamtypes.ShardIteratorType) {
	it, err := s.client.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(s.streamArn), ShardId: aws.String(id), ShardIteratorType: pos})
	if err != nil {
		if ctx.Err() == nil {
			slog.Error("stream: shard iterator", "shard", id, "err", err)
		}
		return
	}
	iter := it.ShardIterator
	var batch []map[string]any
	var batchStart time.Time
	for iter != nil && ctx.Err() == nil {
		out, err := s.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
		if err != nil {
			if ctx.Err() == nil {
				slog.Error("stream: get records", "shard", id, "err", err)
				time.Sleep(time.Second)
			}
			continue
		}
		iter = out.NextShardIterator
		for _, r := range out.Records {
			rec := s.eventRecord(r)
			if !passes(s.filters, rec) {
				continue
			}
			if len(batch) == 0 {
				batchStart = time.Now()
			}
			batch = append(batch, rec)
			if len(batch) == s.spec.batchSize {
				s.deliver(ctx, id, batch)
				batch = nil
			}
		}
		if len(batch) > 0 && (time.Since(batchStart) >= s.spec.window || len(out.Records) == 0) {
			s.deliver(ctx, id, batch)
			batch = nil
		}
		if len(out.Records) == 0 {
			select { // Lambda polls each shard about four times a second
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	if len(batch) > 0 && ctx.Err() == nil {
		s.deliver(ctx, id, batch)
	}
}

// deliver invokes the function with a batch of one shard's records, with
// the mapping's retries, bisection and record age.
func (s *streamSource) deliver(ctx context.Context, shard string, batch []map[string]any) {
	if s.spec.maxAge > 0 {
		var fresh, expired []map[string]any
		for _, r := range batch {
			created, _ := r["dynamodb"].(map[string]any)["ApproximateCreationDateTime"].(float64)
			if time.Since(time.Unix(int64(created), 0)) > s.spec.maxAge {
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
		o, _, err := s.fn.Invoke(ctx, payload, 0)
		if err == nil && o.status == "ok" {
			return
		}
		if s.spec.retries >= 0 && attempt >= s.spec.retries {
			s.fail(shard, batch, "RetryAttemptsExhausted", attempt+1, &o)
			return
		}
		if s.spec.bisect && len(batch) > 1 {
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
func (s *streamSource) fail(shard string, batch []map[string]any, condition string, invocations int, last *outcome) {
	if s.onFailure == nil {
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
		"requestContext": map[string]any{"requestId": uuid.NewString(), "functionArn": s.fn.arn, "condition": condition, "approximateInvokeCount": invocations},
		"version":        "1.0", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
		"DDBStreamBatchInfo": map[string]any{"shardId": shard, "startSequenceNumber": ddb(first)["SequenceNumber"], "endSequenceNumber": ddb(lastRec)["SequenceNumber"],
			"approximateArrivalOfFirstRecord": arrival(first), "approximateArrivalOfLastRecord": arrival(lastRec),
			"batchSize": len(batch), "streamArn": s.streamArn},
	}
	if last != nil {
		rc := map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"}
		if last.status == "" { // the invocation itself failed (throttled, could not start)
			rc = map[string]any{"statusCode": 429, "executedVersion": "$LATEST", "functionError": ""}
		}
		record["responseContext"] = rc
	}
	body, _ := json.Marshal(record)
	s.onFailure.send(string(body), 0)
}

// eventRecord is a stream record as Lambda hands it to a function.
func (s *streamSource) eventRecord(r streamtypes.Record) map[string]any {
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
		"eventSource": "aws:dynamodb", "awsRegion": localRegion, "eventSourceARN": s.streamArn, "dynamodb": ddb}
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

// queueSource is an SQS event source mapping: up to MaximumConcurrency
// batches in flight, each of up to BatchSize messages; a message the
// function reports as failed (ReportBatchItemFailures), or every message
// of a batch whose invocation failed, is left to come back after the
// queue's visibility timeout, and to its dead-letter queue after
// maxReceiveCount receives; the others are deleted.
type queueSource struct {
	spec    queueMappingSpec
	fn      *function
	queue   *sqsQueue
	filters []filter
}

func (s *queueSource) run(ctx context.Context) {
	sem := make(chan struct{}, s.spec.maxConcurrency)
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
// batching window, for a fuller batch.
func (s *queueSource) gather(ctx context.Context) []sqsMessage {
	var msgs []sqsMessage
	deadline := time.Now().Add(s.spec.window)
	for ctx.Err() == nil {
		msgs = append(msgs, s.queue.receive(s.spec.batchSize-len(msgs), -1)...)
		if len(msgs) == s.spec.batchSize || (len(msgs) > 0 && !time.Now().Before(deadline)) {
			return msgs
		}
		select {
		case <-ctx.Done():
		case <-s.queue.wake:
		case <-time.After(100 * time.Millisecond):
			if len(msgs) > 0 && !time.Now().Before(deadline) {
				return msgs
			}
		}
	}
	return msgs
}

func (s *queueSource) invoke(ctx context.Context, msgs []sqsMessage) {
	var records []map[string]any
	var passed []sqsMessage
	for _, m := range msgs {
		rec := map[string]any{"messageId": m.id, "receiptHandle": m.receipt, "body": m.body, "md5OfBody": m.md5,
			"attributes": map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives), "SentTimestamp": strconv.FormatInt(m.sent.UnixMilli(), 10),
				"SenderId": localAccount, "ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10)},
			"messageAttributes": map[string]any{}, "eventSource": "aws:sqs", "eventSourceARN": s.queue.arn, "awsRegion": localRegion}
		if len(s.filters) > 0 {
			view := map[string]any{"body": m.body}
			var body any
			if json.Unmarshal([]byte(m.body), &body) == nil {
				view["body"] = body
			}
			if !passes(s.filters, view) {
				s.queue.delete(m.receipt) // Lambda deletes what its filters drop
				continue
			}
		}
		records, passed = append(records, rec), append(passed, m)
	}
	if len(records) == 0 {
		return
	}
	payload, _ := json.Marshal(map[string]any{"Records": records})
	o, _, err := s.fn.Invoke(ctx, payload, 0)
	if err != nil || o.status != "ok" {
		return // the whole batch comes back after the visibility timeout
	}
	failed := map[string]bool{}
	if s.spec.reportFailures {
		var resp struct {
			Failures []struct {
				ID string `json:"itemIdentifier"`
			} `json:"batchItemFailures"`
		}
		if json.Unmarshal(o.body, &resp) == nil {
			inBatch := map[string]bool{}
			for _, m := range passed {
				inBatch[m.id] = true
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
		if !failed[m.id] {
			s.queue.delete(m.receipt)
		}
	}
}

// schedule runs a rule: every interval, an asynchronous invocation of each
// target with EventBridge's scheduled event.
type schedule struct {
	spec    scheduleSpec
	targets []*asyncTarget
}

// asyncTarget is a function invoked asynchronously: Lambda's retries
// (EventInvokeConfig) on function errors, then its on-failure
// destination; the rule's dead-letter queue when the invocation could not
// be made at all.
type asyncTarget struct {
	fn         *function
	retries    int
	onFailure  *sqsQueue
	deadLetter *sqsQueue
}

func (s *schedule) run(ctx context.Context) {
	t := time.NewTicker(s.spec.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			event, _ := json.Marshal(map[string]any{"version": "0", "id": uuid.NewString(), "detail-type": "Scheduled Event", "source": "aws.events",
				"account": localAccount, "time": now.UTC().Format(time.RFC3339), "region": localRegion,
				"resources": []string{"arn:aws:events:" + localRegion + ":" + localAccount + ":rule/" + s.spec.rule}, "detail": map[string]any{}})
			for _, tg := range s.targets {
				go tg.invoke(ctx, event)
			}
		}
	}
}

func (a *asyncTarget) invoke(ctx context.Context, event []byte) {
	for attempt := 0; ; attempt++ {
		o, id, err := a.fn.Invoke(ctx, event, time.Minute)
		if err != nil {
			if a.deadLetter != nil && ctx.Err() == nil {
				a.deadLetter.send(string(event), 0)
			}
			return
		}
		if o.status == "ok" {
			return
		}
		if attempt >= a.retries {
			if a.onFailure != nil {
				rec, _ := json.Marshal(map[string]any{"version": "1.0", "timestamp": time.Now().UTC().Format(time.RFC3339Nano),
					"requestContext":  map[string]any{"requestId": id, "functionArn": a.fn.arn + ":$LATEST", "condition": "RetriesExhausted", "approximateInvokeCount": attempt + 1},
					"requestPayload":  json.RawMessage(event),
					"responseContext": map[string]any{"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
					"responsePayload": json.RawMessage(orNullJSON(o.body))})
				a.onFailure.send(string(rec), 0)
			}
			return
		}
		select { // Lambda waits a minute, then two, between async retries
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt+1) * time.Minute):
		}
	}
}

func orNullJSON(b []byte) []byte {
	if json.Valid(b) {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}
