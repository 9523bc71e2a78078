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

// TestAJournalLineThatCannotBeReadStopsTheStart (#40, item 7): only a cut
// short last line (a kill in the middle of its write: the change was never
// acknowledged) is skipped. A garbled line anywhere else (a del whose loss
// would bring a deleted job back, a set whose loss would drop a live one),
// or a last line that was written whole, stops the start with its line
// number, and the journal is left as it was.
func TestAJournalLineThatCannotBeReadStopsTheStart(t *testing.T) {
	serve := func(path string) error {
		s := New("http://127.0.0.1:1", iam.NewIdentities())
		s.Create(&stack.Queue{Name: "jobs", Visibility: time.Minute, Retention: time.Hour}, nil)
		err := s.OpenJournal(path)
		if err == nil {
			s.Journal.Close()
		}
		return err
	}
	good := func(t *testing.T) (string, []string) {
		path := filepath.Join(t.TempDir(), "queues.jsonl")
		s := New("http://127.0.0.1:1", iam.NewIdentities())
		q := s.Create(&stack.Queue{Name: "jobs", Visibility: time.Minute, Retention: time.Hour}, nil)
		if err := s.OpenJournal(path); err != nil {
			t.Fatal(err)
		}
		q.SendGroup("deleted", "g", 0)
		q.SendGroup("live", "g", 0)
		for _, m := range q.Receive(1, -1) {
			q.Delete(m.Receipt)
		}
		s.Journal.Close()
		raw, _ := os.ReadFile(path)
		return path, strings.SplitAfter(string(raw), "\n")
	}
	for _, c := range []struct {
		name    string
		garble  func(lines []string) []string
		wantErr string
	}{
		{"a garbled line in the middle", func(l []string) []string { l[2] = `{"q":"jobs","op":"del","id":` + "\n"; return l }, "line 3"},
		{"a garbled set in the middle", func(l []string) []string { l[1] = "{\"q\":\"jobs\",\"op\":\"set\"}\n"; return l }, "line 2"},
		{"a last line written whole but unreadable", func(l []string) []string { return append(l, "not json\n") }, "written whole"},
		{"a last line cut short", func(l []string) []string { return append(l, `{"q":"jobs","op":"set","id":"half`) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, lines := good(t)
			garbled := strings.Join(c.garble(lines), "")
			if err := os.WriteFile(path, []byte(garbled), 0o600); err != nil {
				t.Fatal(err)
			}
			err := serve(path)
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("a cut-short last line stopped the start: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("the start: %v; want an error naming %q", err, c.wantErr)
			}
			if raw, _ := os.ReadFile(path); string(raw) != garbled {
				t.Fatal("the journal was rewritten over the unreadable line")
			}
		})
	}
}
