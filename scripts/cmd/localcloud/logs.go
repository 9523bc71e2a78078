package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// logWriter serialises whole lines from many processes onto one stream.
type logWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, s)
}

// lineLogger writes one function's lines, prefixed with its name, as
// CloudWatch would hold them in its log group: the function's own JSON
// lines (filtered by its LoggingConfig's application log level, as Lambda
// filters them) and the platform's REPORT line of each invocation.
type lineLogger struct {
	name string
	w    *logWriter
}

var levels = map[string]int{"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "WARNING": 3, "ERROR": 4, "FATAL": 5}

func (l *lineLogger) app(s, minLevel string) {
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
	l.w.line("[" + l.name + "] " + s)
}

func (l *lineLogger) system(s string) { l.w.line("[" + l.name + "] " + s) }
