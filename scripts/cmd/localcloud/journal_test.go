package main

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestQueuesSurviveARestart: a localcloud killed at any point (no close,
// a last line cut short) leaves a journal from which the next one, on the
// same folder, gets back every message it had not deleted: visible ones
// visible, one in flight hidden until its visibility timeout ends (with its
// receive count), one moved to the dead-letter queue there. The journal
// is compacted at start.
func TestQueuesSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queues.jsonl")
	serve := func() (*sqsServer, *sqsQueue, *sqsQueue) {
		s := newSQSServer("http://127.0.0.1:1")
		dlq := s.create(&queueSpec{name: "jobs-dlq", visibility: time.Minute, retention: time.Hour}, nil)
		jobs := s.create(&queueSpec{name: "jobs", visibility: time.Minute, retention: time.Hour, maxReceives: 1}, dlq)
		if err := s.openJournal(path); err != nil {
			t.Fatal(err)
		}
		return s, jobs, dlq
	}
	_, jobs, dlq := serve()
	for _, b := range []string{"deleted", "in-flight", "dead", "waiting"} {
		jobs.send(b, 0)
	}
	jobs.send("later", time.Hour) // delayed
	got := jobs.receive(3, -1)    // deleted, in-flight, dead: received once each
	if len(got) != 3 || !jobs.delete(got[0].receipt) {
		t.Fatalf("received %v", got)
	}
	if !jobs.changeVisibility(got[2].receipt, 0) { // "dead" back at once: its next receive moves it to the dead-letter queue
		t.Fatal("change visibility")
	}
	if again := jobs.receive(10, -1); len(again) != 1 || again[0].body != "waiting" {
		t.Fatalf("the second receive: %v", again)
	}
	// Killed: no close; a line cut short at the end.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"q":"jobs","op":"set","id":"half`)
	f.Close()

	_, jobs2, dlq2 := serve()
	state := func(q *sqsQueue) []string {
		var out []string
		for _, m := range q.msgs {
			vis := "visible"
			if m.visible.After(time.Now()) {
				vis = "hidden"
			}
			out = append(out, m.body+"/"+vis+"/"+string(rune('0'+m.receives)))
		}
		sort.Strings(out)
		return out
	}
	if got, want := state(jobs2), []string{"in-flight/hidden/1", "later/hidden/0", "waiting/hidden/1"}; !slices.Equal(got, want) {
		t.Errorf("jobs after the restart: %v, want %v (before: %v)", got, want, state(jobs))
	}
	if got, want := state(dlq2), []string{"dead/visible/0"}; !slices.Equal(got, want) {
		t.Errorf("the dead-letter queue after the restart: %v, want %v (before: %v)", got, want, state(dlq))
	}
	raw, _ := os.ReadFile(path)
	if lines := strings.Count(string(raw), "\n"); lines != 4 {
		t.Errorf("the journal after its compaction holds %d lines, want 4", lines)
	}
	// The restarted server journals too: a delete survives the next restart.
	for _, m := range jobs2.msgs {
		m.visible = time.Now()
	}
	for _, m := range jobs2.receive(10, -1) {
		jobs2.delete(m.receipt)
	}
	_, jobs3, _ := serve()
	if len(jobs3.msgs) != 0 {
		t.Errorf("deleted messages came back: %v", state(jobs3))
	}
}
