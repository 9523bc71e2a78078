package docs

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/webhook/signature"
)

// TestReceiversSurviveTheProbe sends each input of the #38 probe to each
// receiver of docs/receivers (Go, Python, Node, Node on Standard Webhooks;
// scripts/webhook-receiver's cap has a test of its own): a body
// over 1 MiB, with its length said (413 before the body is sent) or
// chunked (413, or 411 from Python, which takes only a said length, long
// before the body ends); a non-ASCII or latin-1 v1=, a t=² (which crashed
// the Python one), a t of 5,000 digits (past Python's int() limit), odd
// hex, no signature, a wrong secret: each is answered with a 4xx, and a
// good delivery after them all is still accepted (204). The receivers run
// as their readers run them, on loopback, with no API server: this test
// needs none. Without python3 or node a language is skipped, except where
// RECEIVERS_REQUIRED=1 (CI).
func TestReceiversSurviveTheProbe(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the receivers under Node, Python and a Go build (4 to 20 s of make unit's tail beside its other packages): skipped with -short, as make unit runs no Node; make test runs it")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var key [32]byte
	_, _ = rand.Read(key[:])
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key[:])
	secrets := filepath.Join(t.TempDir(), "secrets")
	if err := os.WriteFile(secrets, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goBin := filepath.Join(t.TempDir(), "go-receiver")
	var buildOnce sync.Once
	var buildErr error
	for _, rc := range []struct {
		name, interpreter string
		args              []string
	}{
		{"go", "go", nil},
		{"python", "python3", []string{filepath.Join(root, "docs", "receivers", "receiver.py")}},
		{"node", "node", []string{filepath.Join(root, "docs", "receivers", "receiver.mjs")}},
		{"standard-webhooks", "node", []string{filepath.Join(root, "docs", "receivers", "standard-webhooks", "receiver.mjs")}},
	} {
		t.Run(rc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(rc.interpreter); err != nil {
				if os.Getenv("RECEIVERS_REQUIRED") == "1" {
					t.Fatalf("%s is not installed, and RECEIVERS_REQUIRED=1", rc.interpreter)
				}
				t.Skipf("%s is not installed here: the %s receiver is not probed (CI installs it)", rc.interpreter, rc.name)
			}
			bin, args := rc.interpreter, rc.args
			switch rc.name {
			case "go":
				buildOnce.Do(func() {
					// go run keeps the executable it links in the build cache
					// (go build -o links it again each time): run through cp,
					// it leaves a copy at goBin, and a warm run does not link.
					cmd := exec.Command("go", "run", "-exec", "cp", "./docs/receivers/go", goBin)
					cmd.Dir = root
					if out, err := cmd.CombinedOutput(); err != nil {
						buildErr = fmt.Errorf("build the Go receiver: %v\n%s", err, out)
					}
				})
				if buildErr != nil {
					t.Fatal(buildErr)
				}
				bin = goBin
			case "standard-webhooks":
				dir := filepath.Join(root, "docs", "receivers", "standard-webhooks")
				if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
					cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
					cmd.Dir = dir
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
					}
				}
			}
			addr := startReceiver(t, bin, args, secrets)
			probe(t, addr, secret)
		})
	}
}

// startReceiver starts a receiver on a free loopback port and returns its
// address once it listens. A port taken between picking and binding makes
// the receiver exit: it is tried again on another.
func startReceiver(t *testing.T, bin string, args []string, secrets string) string {
	t.Helper()
	for try := 0; ; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "PORT="+port, "WEBHOOK_SECRETS_FILE="+secrets)
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("%s's stderr:\n%s", filepath.Base(bin), stderr.String())
			}
		})
		for i := 0; ; i++ {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return addr
			}
			select {
			case <-exited:
				if try < 3 {
					goto again
				}
				t.Fatalf("the receiver exited: %s", stderr.String())
			case <-time.After(100 * time.Millisecond):
			}
			if i > 150 {
				t.Fatalf("the receiver does not listen on %s: %s", addr, stderr.String())
			}
		}
	again:
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// probe sends the probe's inputs to the receiver at addr, which holds
// secret.
func probe(t *testing.T, addr, secret string) {
	body := []byte(`{"id":"evt_probe","event":"matter.created","sequence":7,"created_at":"2026-01-01T00:00:00Z","data":{"matter":{"id":"mat_1","status":"active"}}}`)
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	signed := func(h map[string]string) map[string]string {
		out := map[string]string{
			signature.Header:                 signature.SignAll([]string{secret}, now, body),
			signature.HeaderWebhookID:        "evt_probe",
			signature.HeaderWebhookTimestamp: ts,
			signature.HeaderWebhookSignature: signature.StandardSign([]string{secret}, "evt_probe", now, body),
		}
		for k, v := range h {
			if v == "" {
				delete(out, k)
			} else {
				out[k] = v
			}
		}
		return out
	}
	const cap = 1 << 20
	for _, in := range []struct {
		name    string
		headers map[string]string
		size    int64 // a body of this many bytes instead, not signed
		chunked bool
		want    []int
	}{
		{name: "a good delivery", headers: signed(nil), want: []int{204}},
		{name: "no signature", headers: signed(map[string]string{signature.Header: "", signature.HeaderWebhookSignature: ""}), want: []int{401}},
		{name: "a wrong secret", headers: map[string]string{
			signature.Header: signature.SignAll([]string{"whsec_bm90LXRoaXMtb25l"}, now, body), signature.HeaderWebhookID: "evt_probe", signature.HeaderWebhookTimestamp: ts,
			signature.HeaderWebhookSignature: signature.StandardSign([]string{"whsec_bm90LXRoaXMtb25l"}, "evt_probe", now, body)}, want: []int{401}},
		{name: "a non-ASCII v1", headers: signed(map[string]string{signature.Header: "t=" + ts + ",v1=\xc3\xa9\xc3\xa9\xc3\xa9", signature.HeaderWebhookSignature: "v1,\xc3\xa9\xc3\xa9"}), want: []int{400, 401}},
		{name: "a latin-1 v1", headers: signed(map[string]string{signature.Header: "t=" + ts + ",v1=\xe9\xe9\xe9\xe9", signature.HeaderWebhookSignature: "v1,\xe9\xe9"}), want: []int{400, 401}},
		{name: "t=² (latin-1)", headers: signed(map[string]string{signature.Header: "t=\xb2,v1=00", signature.HeaderWebhookTimestamp: "\xb2"}), want: []int{400, 401}},
		{name: "t=² (UTF-8)", headers: signed(map[string]string{signature.Header: "t=\xc2\xb2,v1=00", signature.HeaderWebhookTimestamp: "\xc2\xb2"}), want: []int{400, 401}},
		{name: "a t of 5000 digits", headers: signed(map[string]string{signature.Header: "t=" + strings.Repeat("9", 5000) + ",v1=00", signature.HeaderWebhookTimestamp: strings.Repeat("9", 5000)}), want: []int{400, 401}},
		{name: "odd hex", headers: signed(map[string]string{signature.Header: "t=" + ts + ",v1=abc", signature.HeaderWebhookSignature: "v1,abc"}), want: []int{400, 401}},
		{name: "a body over the cap, its length said", headers: signed(nil), size: 64 << 20, want: []int{413}},
		{name: "a body over the cap, chunked", headers: signed(nil), size: 64 << 20, chunked: true, want: []int{411, 413}},
		{name: "a good delivery after them all", headers: signed(nil), want: []int{204}},
	} {
		status, sent, err := send(addr, in.headers, body, in.size, in.chunked)
		if err != nil {
			t.Errorf("%s: no answer (%v): the receiver crashed or hung", in.name, err)
			continue
		}
		ok := false
		for _, w := range in.want {
			ok = ok || status == w
		}
		if !ok {
			t.Errorf("%s: %d, want one of %v", in.name, status, in.want)
		}
		// A capped receiver answers before the body is all sent: 64 MiB
		// sent means it read the whole body first.
		if in.size > 0 && sent >= in.size {
			t.Errorf("%s: answered only after all %d MiB were sent (sent %d): the body is not capped at %d", in.name, in.size>>20, sent, cap)
		}
	}
}

// send writes a POST to addr by hand (header values as raw bytes, which
// net/http's client would refuse) and reads the answer. With size > 0 it
// sends that many bytes of body instead of body, streaming (chunked, or
// with the length said) until the answer comes; sent is how much of it
// had been written by then.
func send(addr string, headers map[string]string, body []byte, size int64, chunked bool) (status int, sent int64, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	var head strings.Builder
	fmt.Fprintf(&head, "POST /hooks HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nConnection: close\r\n", addr)
	for k, v := range headers {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	length := int64(len(body))
	if size > 0 {
		length = size
	}
	if chunked {
		head.WriteString("Transfer-Encoding: chunked\r\n")
	} else {
		fmt.Fprintf(&head, "Content-Length: %d\r\n", length)
	}
	head.WriteString("\r\n")
	if _, err := io.WriteString(c, head.String()); err != nil {
		return 0, 0, err
	}
	var written atomic.Int64
	answered := make(chan struct{})
	go func() {
		if size == 0 {
			_, _ = c.Write(body)
			return
		}
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for written.Load() < size {
			select {
			case <-answered:
				return
			default:
			}
			p := chunk
			if chunked {
				p = append([]byte(fmt.Sprintf("%x\r\n", len(chunk))), append(chunk, "\r\n"...)...)
			}
			if _, err := c.Write(p); err != nil {
				return
			}
			written.Add(int64(len(chunk)))
		}
		if chunked {
			_, _ = io.WriteString(c, "0\r\n\r\n")
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	sent = written.Load()
	close(answered)
	if err != nil {
		return 0, sent, err
	}
	resp.Body.Close()
	return resp.StatusCode, sent, nil
}
