package sqsserver

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/iam"
	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// TestQueuesSurviveARestart: a localcloud killed at any point (no close,
// a last line cut short) leaves a journal from which the next one, on the
// same folder, gets back every message it had not deleted: visible ones
// visible, one in flight hidden until its visibility timeout ends (with its
// receive count), one moved to the dead-letter queue there. The journal
// is compacted at start.
func TestQueuesSurviveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "queues.jsonl")
	serve := func() (*Server, *Queue, *Queue) {
		s := New("http://127.0.0.1:1", iam.NewIdentities())
		dlq := s.Create(&stack.Queue{Name: "jobs-dlq", Visibility: time.Minute, Retention: time.Hour}, nil)
		jobs := s.Create(&stack.Queue{Name: "jobs", Visibility: time.Minute, Retention: time.Hour, MaxReceives: 1}, dlq)
		if err := s.OpenJournal(path); err != nil {
			t.Fatal(err)
		}
		return s, jobs, dlq
	}
	_, jobs, dlq := serve()
	for _, b := range []string{"deleted", "in-flight", "dead", "waiting"} {
		jobs.Send(b, 0)
	}
	jobs.Send("later", time.Hour) // delayed
	got := jobs.Receive(3, -1)    // deleted, in-flight, dead: received once each
	if len(got) != 3 || !jobs.Delete(got[0].Receipt) {
		t.Fatalf("received %v", got)
	}
	if !jobs.changeVisibility(got[2].Receipt, 0) { // "dead" back at once: its next receive moves it to the dead-letter queue
		t.Fatal("change visibility")
	}
	if again := jobs.Receive(10, -1); len(again) != 1 || again[0].Body != "waiting" {
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
	state := func(q *Queue) []string {
		var out []string
		for _, m := range q.msgs {
			vis := "visible"
			if m.visible.After(time.Now()) {
				vis = "hidden"
			}
			out = append(out, m.Body+"/"+vis+"/"+string(rune('0'+m.Receives)))
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
	for _, m := range jobs2.Receive(10, -1) {
		jobs2.Delete(m.Receipt)
	}
	_, jobs3, _ := serve()
	if len(jobs3.msgs) != 0 {
		t.Errorf("deleted messages came back: %v", state(jobs3))
	}
}
