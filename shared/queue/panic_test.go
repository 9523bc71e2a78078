package queue_test

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/cpr"
	"github.com/practice-api/practice-api/shared/logs"
	"github.com/practice-api/practice-api/shared/queue"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestRunSurvivesAPanickingHandler: a handler that panics (its value
// naming a CPR) on a message's first receive fails that message, which
// comes back and is then handled; the other messages are handled
// meanwhile; the panic is one redacted line of the runtime's logger, not
// the Go runtime's report of a crash (the devserver's workers run so).
func TestRunSurvivesAPanickingHandler(t *testing.T) {
	t.Parallel()
	q := queue.NewMemory(200 * time.Millisecond)
	for _, b := range []string{"boom", "a", "b"} {
		if err := q.Send(context.Background(), "org", []byte(b), 0); err != nil {
			t.Fatal(err)
		}
	}
	var out syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var handled, boomed atomic.Int32
	go queue.Run(ctx, logs.JSON(&out), q, "test", 2, func(_ context.Context, m queue.Message) error {
		if string(m.Body) == "boom" && boomed.Add(1) == 1 {
			panic("stored item for 010190-1234 is not what the code expects")
		}
		if handled.Add(1) == 3 {
			cancel()
		}
		return nil
	})
	<-ctx.Done()
	if handled.Load() != 3 {
		t.Fatalf("%d of 3 messages handled (the panicking one came back: %v)\n%s", handled.Load(), boomed.Load() > 1, out.String())
	}
	lines := out.String()
	if cpr.Find(lines) || strings.Count(lines, `"msg":"message panicked"`) != 1 || !strings.Contains(lines, cpr.Marker) || !strings.Contains(lines, `"stack":"goroutine`) {
		t.Fatalf("want one redacted panic line with its stack:\n%s", lines)
	}
}
