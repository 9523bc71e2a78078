// Command receiver is a Practice API webhook receiver in Go, on the
// signature package (go get github.com/practice-api/practice-api, then
// import .../shared/webhook/signature; it has no other dependency).
//
// signature.VerifyAny checks Service-Signature (t=<unix seconds>,v1=<hex>
// [,v1=<hex>], v1 = HMAC-SHA256 of "{t}.{raw body}" keyed with the whole
// secret, whsec_ prefix included) against any of your secrets, in constant
// time, and rejects timestamps more than 300 s from the clock. Secrets are
// one per line in WEBHOOK_SECRETS_FILE, read on every request: during a
// rotation, add the new secret on a second line, then drop the old one.
// Deliveries are at least once: it deduplicates on the event id. They
// are also unordered: each carries its sequence (its place in the
// organisation's feed, GET /events), and the receiver applies an event to
// a resource only if no later event of it was applied (stale otherwise).
// It reads no body over maxBody (413: a delivery is a few hundred bytes).
//
//	WEBHOOK_SECRETS_FILE=secrets.txt PORT=9000 go run ./docs/receivers/go
package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/practice-api/practice-api/shared/webhook/signature"
)

// maxBody is the largest body read: deliveries carry ids and status only.
const maxBody = 1 << 20

func main() {
	var mu sync.Mutex
	seen := map[string]bool{}     // event ids already handled; keep them in your database in production
	applied := map[string]int64{} // resource id -> sequence of the latest event applied to it
	http.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody)) // the raw bytes, never re-serialised JSON
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			w.WriteHeader(http.StatusRequestEntityTooLarge) // the rest is not read; the connection is closed
			return
		}
		raw, ferr := os.ReadFile(os.Getenv("WEBHOOK_SECRETS_FILE"))
		if err != nil || ferr != nil ||
			signature.VerifyAny(strings.Fields(string(raw)), r.Header.Get(signature.Header), body, time.Now(), signature.DefaultTolerance) != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var event struct {
			ID       string `json:"id"`
			Event    string `json:"event"`
			Sequence int64  `json:"sequence"` // absent (0) on webhook.test
			Data     map[string]struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &event); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		duplicate := seen[event.ID]
		seen[event.ID] = true
		stale := false
		for _, resource := range event.Data { // one object: the matter, invoice, time entry…
			if !duplicate && event.Sequence > 0 {
				stale = event.Sequence < applied[resource.ID]
				applied[resource.ID] = max(applied[resource.ID], event.Sequence)
			}
		}
		mu.Unlock()
		// Handle the event here, once, unless it is stale (a later event of
		// the same resource came first: read the resource through the API
		// if you need its state).
		line, _ := json.Marshal(map[string]any{"event_id": event.ID, "event": event.Event, "sequence": event.Sequence,
			"attempt": r.Header.Get("Service-Delivery-Attempt"), "duplicate": duplicate, "stale": stale})
		fmt.Println(string(line))
		w.WriteHeader(http.StatusNoContent)
	})
	// PORT=0 takes any free port; the line on stderr says which.
	ln, err := net.Listen("tcp", "127.0.0.1:"+cmp.Or(os.Getenv("PORT"), "9000"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "listening on http://%s/\n", ln.Addr())
	log.Fatal(http.Serve(ln, nil))
}
