package sqsserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/practice-api/practice-api/shared/clock"
)

// A journal keeps the queues' messages across a restart of localcloud, as
// SQS keeps them across anything that happens to its consumers: every
// change to a message (sent, received, hidden, moved to its dead-letter
// queue, deleted) is appended as one JSON line under the queue's lock, and
// a new localcloud on the same folder replays them. A message that was in
// flight when localcloud died comes back when its visibility timeout ends,
// as SQS gives back a message whose consumer died. Only a process kill is
// covered (the lines are written, not synced): a machine that loses power
// loses the last writes.
type journal struct {
	mu       sync.Mutex
	path     string
	f        *os.File
	w        *bufio.Writer
	appended int // lines since the last compaction
}

// journalLine is one change: the message's whole state ("set"), or its
// end in that queue ("del").
type journalLine struct {
	Queue string          `json:"q"`
	Op    string          `json:"op"`
	ID    string          `json:"id"`
	Msg   *journalMessage `json:"m,omitempty"`
}

type journalMessage struct {
	ID, Body, MD5, Receipt string
	Group                  string `json:",omitempty"`
	Sent, Visible, First   time.Time
	Receives               int
}

func toJournal(m *Message) *journalMessage {
	return &journalMessage{ID: m.ID, Body: m.Body, MD5: m.MD5, Group: m.Group, Receipt: m.Receipt, Sent: m.Sent, Visible: m.visible, First: m.FirstReceive, Receives: m.Receives}
}

func (j *journalMessage) message() *Message {
	return &Message{ID: j.ID, Body: j.Body, MD5: j.MD5, Group: j.Group, Receipt: j.Receipt, Sent: j.Sent, visible: j.Visible, FirstReceive: j.First, Receives: j.Receives}
}

// OpenJournal replays the journal at path (if any) into the server's
// queues, rewrites it compacted, and attaches it to every queue.
func (s *Server) OpenJournal(path string) error {
	state, order, err := readJournal(path)
	if err != nil {
		return err
	}
	restored := s.restore(state, order)
	j := &journal{path: path}
	s.Journal = j
	if err := s.compact(); err != nil {
		return err
	}
	if restored > 0 {
		slog.Info("localcloud: queues restored from their journal", "messages", restored, "journal", path)
	}
	for _, q := range s.queues {
		q.journal = j
	}
	return nil
}

// readJournal reads the journal at path (none: empty queues): each
// queue's messages as its last line left them (by id), and the order of
// their first appearance, which is their queue's order.
func readJournal(path string) (map[string]map[string]*journalMessage, []journalLine, error) {
	state := map[string]map[string]*journalMessage{}
	var order []journalLine // first appearance of each (queue, id), for the queue's order
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		// A line that cannot be read is skipped only when it is the last
		// one and is cut short (no newline: a kill stopped its write, so
		// its change was never acknowledged). Anywhere else it is a change
		// that was made and acknowledged and is now unreadable: dropping it
		// would bring a deleted message back or lose a live one, so the
		// start stops, naming the line.
		var bad []byte
		badLine, lineNo := 0, 0
		for sc.Scan() {
			lineNo++
			if bad != nil {
				f.Close()
				return nil, nil, fmt.Errorf("queue journal %s: line %d cannot be read (%.80q); a line that is not the last was not cut short by a kill, "+
					"so a change to a message would be lost: move the journal aside to start with empty queues, or mend the line", path, badLine, bad)
			}
			var l journalLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Queue == "" || l.ID == "" || (l.Op != "set" && l.Op != "del") || (l.Op == "set" && l.Msg == nil) {
				bad, badLine = append([]byte(nil), sc.Bytes()...), lineNo
				continue
			}
			q := state[l.Queue]
			if q == nil {
				q = map[string]*journalMessage{}
				state[l.Queue] = q
			}
			switch l.Op {
			case "set":
				if _, seen := q[l.ID]; !seen {
					order = append(order, journalLine{Queue: l.Queue, ID: l.ID})
				}
				q[l.ID] = l.Msg
			case "del":
				delete(q, l.ID)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, nil, fmt.Errorf("queue journal %s: %w", path, err)
		}
		if bad != nil && endsWithNewline(path) {
			return nil, nil, fmt.Errorf("queue journal %s: its last line, %d, cannot be read (%.80q) although it was written whole (it ends in a newline): "+
				"move the journal aside to start with empty queues, or mend the line", path, badLine, bad)
		}
		if bad != nil {
			slog.Warn("localcloud: the queue journal's last line was cut short by a kill; its change was never acknowledged, and is skipped", "journal", path, "line", badLine)
		}
	} else if !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("queue journal: %w", err)
	}
	return state, order, nil
}

// restore puts the journal's messages back in their queues, in order, and
// returns how many.
func (s *Server) restore(state map[string]map[string]*journalMessage, order []journalLine) int {
	restored := 0
	now := clock.Or(s.Clock).Now()
	s.mu.Lock()
	for _, l := range order {
		m := state[l.Queue][l.ID]
		if m == nil {
			continue // deleted since
		}
		delete(state[l.Queue], l.ID) // once, if it was set again
		q := s.queues[l.Queue]
		if q == nil {
			slog.Warn("localcloud: the queue journal holds a message of a queue the template no longer has; dropped", "queue", l.Queue)
			continue
		}
		msg := m.message()
		q.msgs = append(q.msgs, msg)
		q.fair.Sent(msg.tenant(), msg.Sent)
		if msg.Receives > 0 && msg.visible.After(now) {
			q.fair.Received(msg.tenant(), msg.ID, now, msg.visible) // in flight when localcloud stopped
		}
		restored++
	}
	s.mu.Unlock()
	return restored
}

// compact rewrites the journal as the queues stand: one line per message.
// Every queue's lock is held meanwhile (in name order; no one else holds
// two), so no change is lost between the snapshot and the new file.
func (s *Server) compact() error {
	j := s.Journal
	s.mu.Lock()
	names := make([]string, 0, len(s.queues))
	for n := range s.queues {
		names = append(names, n)
	}
	sort.Strings(names)
	qs := make([]*Queue, len(names))
	for i, n := range names {
		qs[i] = s.queues[n]
	}
	s.mu.Unlock()
	for _, q := range qs {
		q.mu.Lock()
		defer q.mu.Unlock()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(j.path), 0o755); err != nil {
		return err
	}
	tmp := j.path + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("queue journal: %w", err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, q := range qs {
		for _, m := range q.msgs {
			_ = enc.Encode(journalLine{Queue: q.Name, Op: "set", ID: m.ID, Msg: toJournal(m)})
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, j.path); err != nil {
		return err
	}
	if j.f != nil {
		_ = j.w.Flush()
		j.f.Close()
	}
	j.f, err = os.OpenFile(j.path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	j.w, j.appended = bufio.NewWriterSize(j.f, 64<<10), 0
	return nil
}

// CompactEvery rewrites the journal when it has grown past ten lines per
// live message (and 50,000 lines), until stop closes.
func (s *Server) CompactEvery(d time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		live := 0
		s.mu.Lock()
		for _, q := range s.queues {
			q.mu.Lock()
			live += len(q.msgs)
			q.mu.Unlock()
		}
		s.mu.Unlock()
		s.Journal.mu.Lock()
		due := s.Journal.appended > 50000 && s.Journal.appended > 10*live
		s.Journal.mu.Unlock()
		if due {
			if err := s.compact(); err != nil {
				slog.Error("localcloud: compact the queue journal", "err", err)
			}
		}
	}
}

// record appends one change; the caller holds the queue's lock. The line
// is handed to the kernel before the change is acknowledged, so a killed
// localcloud does not lose it.
func (j *journal) record(queue, op string, m *Message) {
	if j == nil {
		return
	}
	l := journalLine{Queue: queue, Op: op, ID: m.ID}
	if op == "set" {
		l.Msg = toJournal(m)
	}
	b, _ := json.Marshal(l)
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.w.Write(append(b, '\n'))
	if err := j.w.Flush(); err != nil {
		slog.Error("localcloud: the queue journal cannot be written; queued messages may not survive a restart", "err", err)
	}
	j.appended++
}

// Close flushes and closes the journal.
func (j *journal) Close() {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f != nil {
		_ = j.w.Flush()
		_ = j.f.Close()
		j.f = nil
	}
}

// endsWithNewline reports whether the file's last byte is a newline (a
// journal line written whole).
func endsWithNewline(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return false
	}
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, st.Size()-1); err != nil {
		return false
	}
	return b[0] == '\n'
}
