package main

import (
	"testing"
	"time"

	"github.com/practice-api/practice-api/scripts/cmd/localcloud/internal/stack"
)

// LOCALCLOUD_QUEUE_VISIBILITY caps the queues' visibility timeouts, and
// refuses a cap below the timeout of a function a queue invokes.
func TestQueueVisibilityCap(t *testing.T) {
	st := func() *stack.Stack {
		return &stack.Stack{
			Functions:     map[string]*stack.Function{"deliveryFn": {Name: "delivery", Timeout: 30 * time.Second}},
			Queues:        map[string]*stack.Queue{"jobs": {Visibility: 180 * time.Second}, "dlq": {Visibility: 30 * time.Second}},
			QueueMappings: []stack.QueueMapping{{Function: "deliveryFn", Queue: "jobs"}},
		}
	}
	s := st()
	if err := capVisibility(s, ""); err != nil || s.Queues["jobs"].Visibility != 180*time.Second {
		t.Fatalf("no cap: %v, %v", err, s.Queues["jobs"].Visibility)
	}
	if err := capVisibility(s, "31s"); err != nil || s.Queues["jobs"].Visibility != 31*time.Second || s.Queues["dlq"].Visibility != 30*time.Second {
		t.Fatalf("a 31 s cap: %v, %v and %v", err, s.Queues["jobs"].Visibility, s.Queues["dlq"].Visibility)
	}
	for _, v := range []string{"29s", "soon", "0s"} {
		s := st()
		if err := capVisibility(s, v); err == nil || s.Queues["jobs"].Visibility != 180*time.Second {
			t.Errorf("LOCALCLOUD_QUEUE_VISIBILITY=%s: %v, visibility %v", v, err, s.Queues["jobs"].Visibility)
		}
	}
}
