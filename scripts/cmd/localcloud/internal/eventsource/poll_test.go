package eventsource

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/lambda"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// oneShard is a stream of one open shard in memory: GetRecords hands out
// what was written since the last read, and counts the reads.
type oneShard struct {
	mu      sync.Mutex
	pending []streamtypes.Record
	seq     int
	reads   int
}

func (o *oneShard) DescribeStream(context.Context, *dynamodbstreams.DescribeStreamInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: &streamtypes.StreamDescription{Shards: []streamtypes.Shard{{ShardId: aws.String("shard-1")}}}}, nil
}

func (o *oneShard) GetShardIterator(context.Context, *dynamodbstreams.GetShardIteratorInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String("it")}, nil
}

func (o *oneShard) GetRecords(context.Context, *dynamodbstreams.GetRecordsInput, ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reads++
	recs := o.pending
	o.pending = nil
	return &dynamodbstreams.GetRecordsOutput{Records: recs, NextShardIterator: aws.String("it")}, nil
}

// write puts one INSERT on the shard.
func (o *oneShard) write() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seq++
	n := strconv.Itoa(o.seq)
	o.pending = append(o.pending, streamtypes.Record{EventID: aws.String("ev" + n), EventName: streamtypes.OperationTypeInsert,
		Dynamodb: &streamtypes.StreamRecord{SequenceNumber: aws.String(n), ApproximateCreationDateTime: aws.Time(time.Now()),
			Keys: map[string]streamtypes.AttributeValue{"pk": &streamtypes.AttributeValueMemberS{Value: n}}}})
}

func (o *oneShard) readCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reads
}

// countingFn is a function that answers every invocation at once.
type countingFn struct{ calls atomic.Int64 }

func (f *countingFn) Invoke(context.Context, []byte, time.Duration) (lambda.Outcome, string, error) {
	f.calls.Add(1)
	return lambda.Outcome{Status: "ok"}, "id", nil
}

func (f *countingFn) ARN() string { return "arn:aws:lambda:us-east-1:000000000000:function:f" }

// streamOnFakeTime runs a stream mapping on oneShard inside a synctest
// bubble (time moves only when every goroutine waits) and hands body the
// shard, the function and the mapping's bell; the mapping stops after.
func streamOnFakeTime(t *testing.T, body func(t *testing.T, sh *oneShard, fn *countingFn, bell *Bell)) {
	synctest.Test(t, func(t *testing.T) {
		sh, fn, bell := &oneShard{}, &countingFn{}, &Bell{}
		s := &Stream{Spec: stack.StreamMapping{BatchSize: 10, Start: "TRIM_HORIZON", Retries: -1}, Fn: fn, Client: sh, Bell: bell,
			StreamArn: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-01-01T00:00:00.000"}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		synctest.Wait()
		body(t, sh, fn, bell)
		cancel()
		<-done
	})
}

// TestAnIdleShardIsReadLessOften: an empty shard is read four times a
// second at first, then half as often after each empty read, down to once
// every idlePoll: 33 reads in an idle minute instead of Lambda's 240 (the
// engine's CPU an idle localcloud costs). A record is still read within
// idlePoll without a ring, and within a quarter second with one (a
// function's write).
func TestAnIdleShardIsReadLessOften(t *testing.T) {
	streamOnFakeTime(t, func(t *testing.T, sh *oneShard, fn *countingFn, bell *Bell) {
		time.Sleep(time.Minute)
		synctest.Wait()
		if n := sh.readCount(); n < 28 || n > 36 {
			t.Fatalf("%d reads of an idle shard in a minute, want about 33 (0, 0.25, 0.75, 1.75, 3.75 s, then every %v)", n, idlePoll)
		}

		sh.write() // a write from outside the stack: no ring
		synctest.Wait()
		if fn.calls.Load() != 0 {
			t.Fatal("a record was read before the next poll (is the shard not idle?)")
		}
		time.Sleep(idlePoll)
		synctest.Wait()
		if n := fn.calls.Load(); n != 1 {
			t.Fatalf("%d invocations idlePoll after an unrung write, want 1", n)
		}

		time.Sleep(time.Minute) // idle again
		synctest.Wait()
		sh.write() // a function's write: its invocation's end rings
		bell.Ring()
		time.Sleep(busyPoll) // at Lambda's pace, not idlePoll's
		synctest.Wait()
		if n := fn.calls.Load(); n != 2 {
			t.Fatalf("%d invocations %v after a rung write, want 2", n, busyPoll)
		}
	})
}

// TestRingsAtLambdasPaceAddNoReads: while a stack is busy every
// invocation rings; a shard that has had records reads at Lambda's pace
// (four times a second) however often the bell rings.
func TestRingsAtLambdasPaceAddNoReads(t *testing.T) {
	streamOnFakeTime(t, func(t *testing.T, sh *oneShard, fn *countingFn, bell *Bell) {
		sh.write()
		bell.Ring()
		synctest.Wait()
		before := sh.readCount()
		for range 100 { // a ring every 10 ms for a second
			time.Sleep(10 * time.Millisecond)
			bell.Ring()
		}
		synctest.Wait()
		if n := sh.readCount() - before; n > 5 {
			t.Fatalf("%d reads in a second of rings every 10 ms, want at most 5 (four a second)", n)
		}
		if n := fn.calls.Load(); n != 1 {
			t.Fatalf("%d invocations, want 1", n)
		}
	})
}

// TestANilBellNeverRings: a mapping without a bell polls on its own.
func TestANilBellNeverRings(t *testing.T) {
	var b *Bell
	b.Ring()
	if b.rung() != nil {
		t.Fatal("a nil bell's channel is not nil")
	}
}
