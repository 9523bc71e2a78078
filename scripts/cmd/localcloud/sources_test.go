package main

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// queueAnswer is the test bootstrap's answer to an SQS batch: the
// messages whose body is "bad" are reported failed; "alien" reports an
// identifier that is not in the batch.
func queueAnswer(raw []byte) (any, error) {
	var ev struct {
		Records []struct {
			ID   string `json:"messageId"`
			Body string `json:"body"`
		}
	}
	_ = json.Unmarshal(raw, &ev)
	type item struct {
		ID string `json:"itemIdentifier"`
	}
	failures := []item{}
	for _, r := range ev.Records {
		switch r.Body {
		case "bad":
			failures = append(failures, item{r.ID})
		case "alien":
			failures = append(failures, item{"not-in-this-batch"})
		}
	}
	return map[string]any{"batchItemFailures": failures}, nil
}

// TestQueueMappingDeletesOnlyWhatSucceeded: with ReportBatchItemFailures,
// the messages a batch reports failed come back after the visibility
// timeout and go to the dead-letter queue after maxReceiveCount; the rest
// are deleted once. An identifier that is not in the batch fails the whole
// batch, as Lambda does.
func TestQueueMappingDeletesOnlyWhatSucceeded(t *testing.T) {
	f, _ := testFunction(t, 5*time.Second, 0)
	s := newSQSServer("http://127.0.0.1:1")
	dlq := s.create(&queueSpec{name: "dlq", visibility: time.Second, retention: time.Hour}, nil)
	q := s.create(&queueSpec{name: "jobs", visibility: time.Second, retention: time.Hour, maxReceives: 2}, dlq)
	for _, body := range []string{"ok-1", "bad", "ok-2", "ok-3"} {
		q.send(body, 0)
	}
	// A batching window gathers what is sent together into one batch.
	src := &queueSource{spec: queueMappingSpec{batchSize: 10, window: 300 * time.Millisecond, reportFailures: true, maxConcurrency: 2}, fn: f, queue: q}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { src.run(ctx) })
	defer func() { cancel(); wg.Wait() }()

	deadLetters := func(want int) []string {
		var dead []string
		for deadline := time.Now().Add(15 * time.Second); len(dead) < want && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			for _, m := range dlq.receive(10, time.Hour) {
				dead = append(dead, m.body)
			}
		}
		time.Sleep(1500 * time.Millisecond) // past a visibility timeout: nothing more comes back
		if visible, inFlight, delayed := q.counts(); visible+inFlight+delayed != 0 {
			t.Fatalf("left in the queue: %d visible, %d in flight, %d delayed", visible, inFlight, delayed)
		}
		sort.Strings(dead)
		return dead
	}
	if dead := deadLetters(1); strings.Join(dead, " ") != "bad" {
		t.Fatalf("dead-lettered: %v, want only bad", dead)
	}
	if n := f.invocations.Load(); n != 2 {
		t.Errorf("%d invocations, want 2 (the batch, then bad again)", n)
	}
	q.send("alien", 0)
	q.send("ok-4", 0)
	if dead := deadLetters(2); strings.Join(dead, " ") != "alien ok-4" {
		t.Fatalf("dead-lettered: %v, want the whole batch with an alien identifier", dead)
	}
}
