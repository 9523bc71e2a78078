package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rcv is scripts/webhook-receiver, run by the suite beside the devserver.
var rcv struct {
	url, ca, secretFile string
	mu                  sync.Mutex
	lines               []receivedLine
	notify              chan struct{}
}

type receivedLine struct {
	EventID   string          `json:"event_id"`
	Event     string          `json:"event"`
	Attempt   string          `json:"attempt"`
	Duplicate bool            `json:"duplicate"`
	Sequence  int64           `json:"sequence"`
	Stale     bool            `json:"stale"`
	Data      json.RawMessage `json:"data"`
	at        time.Time
}

func startReceiver() (func(), error) {
	dir, err := os.MkdirTemp("", "receiver")
	if err != nil {
		return nil, err
	}
	rcv.ca, rcv.secretFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "secret")
	rcv.notify = make(chan struct{}, 1000)
	// Port 0: the receiver binds a free port itself and names it on stderr
	// (a port picked here could be taken before the receiver binds it).
	cmd := exec.Command(filepath.Join(api.root, "scripts", "webhook-receiver"), "--listen", "127.0.0.1:0", "--ca-out", rcv.ca, "--secret-file", rcv.secretFile)
	cmd.Dir = api.root
	out, _ := cmd.StdoutPipe()
	errOut, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l receivedLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				l.at = time.Now()
				rcv.mu.Lock()
				rcv.lines = append(rcv.lines, l)
				rcv.mu.Unlock()
				rcv.notify <- struct{}{}
			}
		}
	}()
	var stderr syncBuffer
	listening, exited := make(chan string, 1), make(chan struct{})
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(errOut)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "receiving on https://"); ok {
				select {
				case listening <- a[:strings.IndexByte(a+"/", '/')]:
				default:
				}
			}
			stderr.WriteString(sc.Text() + "\n")
		}
	}()
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); _ = os.RemoveAll(dir) }
	select {
	case addr := <-listening: // written after the certificate, once bound
		rcv.url = "https://" + addr + "/hooks"
		return stop, nil
	case <-exited:
		stop()
		return nil, fmt.Errorf("webhook receiver exited before listening: %s", stderr.String())
	case <-time.After(2 * time.Minute): // the first run compiles it
		stop()
		return nil, fmt.Errorf("webhook receiver did not start: %s", stderr.String())
	}
}

// waitFor returns the receiver's first line for event id, or fails.
func waitFor(t testing.TB, eventType, resourceID string, timeout time.Duration) receivedLine {
	t.Helper()
	deadline := time.After(timeout)
	for {
		rcv.mu.Lock()
		i := slices.IndexFunc(rcv.lines, func(l receivedLine) bool { return l.Event == eventType && strings.Contains(string(l.Data), resourceID) })
		var l receivedLine
		if i >= 0 {
			l = rcv.lines[i]
		}
		rcv.mu.Unlock()
		if i >= 0 {
			return l
		}
		select {
		case <-rcv.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no %s for %s within %s", eventType, resourceID, timeout)
		}
	}
}

func subscribeReceiver(t testing.TB, key string) {
	t.Helper()
	r := postT(t, "/webhooks", key, "", `{"url":"`+rcv.url+`","event_types":["matter.created","time_entry.created"]}`)
	if r.status != 201 {
		t.Fatalf("subscribe: %d %s", r.status, r.raw)
	}
	if err := os.WriteFile(rcv.secretFile, []byte(r.body["secret"].(string)), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSignedDeliveryReachesTheExampleReceiver is the README's webhook
// walk-through: subscribe, create a matter, and the example receiver
// verifies and prints the delivery.
func TestSignedDeliveryReachesTheExampleReceiver(t *testing.T) {
	if api.local == nil {
		t.Skip("needs a receiver the deployed service can reach")
	}
	_, key, _ := newOrg(t, "webhooks:manage,parties:write,clients:write,matters:write")
	subscribeReceiver(t, key)
	cvr := fmt.Sprintf("%08d", time.Now().UnixNano()%100000000)
	co := id(t, post(t, "/companies", key, "wh-co", `{"name":"Kystlinje ApS","cvr":"`+cvr+`"}`), 201)
	cl := id(t, post(t, "/clients", key, "wh-cl", `{"company_id":"`+co+`"}`), 201)
	m := id(t, post(t, "/matters", key, "wh-m", `{"client_id":"`+cl+`"}`), 201)
	l := waitFor(t, "matter.created", m, 10*time.Second)
	if l.Attempt != "1" || l.Duplicate || l.EventID == "" {
		t.Fatalf("received %+v", l)
	}

	// A test event reaches the same receiver, which verifies it as any other.
	list := get(t, "/webhooks", key)
	wh := list.body["data"].([]any)[0].(map[string]any)["id"].(string)
	r := postT(t, "/webhooks/"+wh+"/test", key, "", "")
	if r.status != 200 || r.body["data"].(map[string]any)["succeeded"] != true {
		t.Fatalf("test event: %d %s", r.status, r.raw)
	}
	if l := waitFor(t, "webhook.test", wh, 5*time.Second); l.Attempt != "1" || l.Duplicate {
		t.Fatalf("test event received %+v", l)
	}
}

// BenchmarkMatterCreateToFirstDelivery measures, through the devserver, the
// time from a POST /matters answer to the example receiver printing its
// matter.created (outbox poll, fan-out, signing, HTTPS delivery).
func BenchmarkMatterCreateToFirstDelivery(b *testing.B) {
	if api.local == nil {
		b.Skip("needs the devserver")
	}
	_, key, _ := newOrg(b, "webhooks:manage,parties:write,clients:write,matters:write")
	subscribeReceiver(b, key)
	cvr := fmt.Sprintf("%08d", time.Now().UnixNano()%100000000)
	co := postT(b, "/companies", key, "bench-co", `{"name":"Bench ApS","cvr":"`+cvr+`"}`).body["data"].(map[string]any)["id"].(string)
	cl := postT(b, "/clients", key, "bench-cl", `{"company_id":"`+co+`"}`).body["data"].(map[string]any)["id"].(string)
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		r := postT(b, "/matters", key, fmt.Sprintf("bench-m-%d-%d", time.Now().UnixNano(), i), `{"client_id":"`+cl+`"}`)
		created := time.Now()
		m := r.body["data"].(map[string]any)["id"].(string)
		l := waitFor(b, "matter.created", m, 10*time.Second)
		took = append(took, l.at.Sub(created))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
