// Command webhook-receiver is an example subscriber: it serves HTTPS,
// verifies each delivery's Service-Signature over the raw body (300 s
// tolerance), deduplicates on the event id (deliveries are at least once),
// and prints one JSON line per event on stdout.
//
//	scripts/webhook-receiver --listen 127.0.0.1:9443 --ca-out /tmp/receiver-ca.pem --secret-file /tmp/receiver-secret
//
// With --listen 127.0.0.1:0 it takes a free port, named on its first
// line on stderr ("receiving on https://127.0.0.1:PORT/ …").
//
// Without --cert/--key it makes a self-signed certificate for 127.0.0.1 and
// localhost and writes it to --ca-out, for the devserver's WEBHOOK_CA_FILE.
// The secret is read from --secret-file on every request, so it can be
// written after subscribing (POST /webhooks answers it once).
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/practice-api/practice-api/shared/webhook/signature"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9443", "address to serve HTTPS on (port 0: a free one, printed on stderr)")
	secretFile := flag.String("secret-file", "", "file holding the endpoint's signing secret (whsec_…), one per line while rotating")
	caOut := flag.String("ca-out", "receiver-ca.pem", "where to write the self-signed certificate")
	certFile := flag.String("cert", "", "TLS certificate (PEM); default: self-signed")
	keyFile := flag.String("key", "", "TLS key (PEM)")
	flag.Parse()
	if *secretFile == "" {
		fail("--secret-file is required")
	}
	var cert tls.Certificate
	var err error
	if *certFile != "" {
		cert, err = tls.LoadX509KeyPair(*certFile, *keyFile)
	} else {
		cert, err = selfSigned(*caOut)
	}
	if err != nil {
		fail(err.Error())
	}
	r := &receiver{secretFile: *secretFile, seen: map[string]time.Time{}}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	// Port 0 takes a free port; this line says which (once it is bound).
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fail(err.Error())
	}
	fmt.Fprintf(os.Stderr, "receiving on https://%s/ (certificate in %s)\n", ln.Addr(), *caOut)
	fail(srv.ServeTLS(ln, "", "").Error())
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "webhook-receiver:", msg)
	os.Exit(1)
}

type receiver struct {
	secretFile string
	mu         sync.Mutex
	seen       map[string]time.Time // event id -> first seen; kept an hour
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A delivery is a few hundred bytes: read no more than 1 MiB (413,
	// the rest unread) rather than cut a longer one short.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		http.Error(w, "body over 1 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	secret, err := os.ReadFile(rc.secretFile)
	if err != nil {
		http.Error(w, "no secret yet", http.StatusServiceUnavailable) // the service retries
		return
	}
	// One secret per line: during a rotation keep the old line and add the
	// new one (POST /webhooks/{id}/rotate-secret), then drop the old.
	if err := signature.VerifyAny(strings.Fields(string(secret)), r.Header.Get(signature.Header), body, time.Now(), signature.DefaultTolerance); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var env struct {
		ID    string          `json:"id"`
		Event string          `json:"event"`
		Data  json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	rc.mu.Lock()
	_, dup := rc.seen[env.ID]
	now := time.Now()
	if !dup {
		rc.seen[env.ID] = now
	}
	for id, at := range rc.seen {
		if now.Sub(at) > time.Hour {
			delete(rc.seen, id)
		}
	}
	rc.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"event_id": env.ID, "event": env.Event, "attempt": r.Header.Get("Service-Delivery-Attempt"),
		"duplicate": dup, "data": env.Data})
	fmt.Println(string(line))
	w.WriteHeader(http.StatusOK) // a duplicate is acknowledged too, or it would be retried
}

// selfSigned makes a certificate for 127.0.0.1, ::1 and localhost and
// writes it (the certificate only, not the key) to caOut.
func selfSigned(caOut string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "webhook-receiver"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(caOut, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
