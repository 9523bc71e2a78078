package lambda

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/cloudwatch"
	"github.com/practice-api/practice-api/shared/cpr"
)

// LogWriter serialises whole lines from many processes onto one stream.
type LogWriter struct {
	mu sync.Mutex
	W  io.Writer
	// Metrics, when set, gets the metrics of the functions' lines in
	// embedded metric format, as CloudWatch Logs extracts them from a log
	// group (after Lambda's log-level filter: a dropped line's metrics are
	// lost on AWS too).
	Metrics *cloudwatch.Store
}

func (l *LogWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.W, s)
}

// Logger writes one function's lines, prefixed with its name, as
// CloudWatch would hold them in its log group: the function's own JSON
// lines (filtered by its LoggingConfig's application log level, as Lambda
// filters them) and the platform's REPORT line of each invocation.
type Logger struct {
	Name string
	W    *LogWriter
}

var levels = map[string]int{"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "WARNING": 3, "ERROR": 4, "FATAL": 5}

// appAt writes one of the function's own lines; its EMF metrics are
// stamped at: the start of the invocation that wrote it (zero: now, on
// the metrics' clock).
func (l *Logger) appAt(s, minLevel string, at time.Time) {
	if minLevel != "" {
		var rec struct {
			Level string `json:"level"`
		}
		if json.Unmarshal([]byte(s), &rec) == nil && rec.Level != "" {
			if lv, ok := levels[rec.Level]; ok && lv < levels[minLevel] {
				return
			}
		}
	}
	if !json.Valid([]byte(s)) {
		s = cpr.Redact(s) // see system
	}
	l.W.line("[" + l.Name + "] " + s)
	if l.W.Metrics != nil {
		if at.IsZero() {
			l.W.Metrics.EMF(s)
		} else {
			l.W.Metrics.EMFAt(s, at)
		}
	}
}

// system writes a line of the platform's (a REPORT, which quotes a
// failed invocation's error). A function's own JSON lines were redacted
// by its logger (package logs); the platform's lines, and anything else a
// function prints (the Go runtime's report of a crash, a stray print),
// are plain text, redacted here: no line localcloud writes carries a CPR
// in clear.
func (l *Logger) system(s string) { l.W.line("[" + l.Name + "] " + cpr.Redact(s)) }
