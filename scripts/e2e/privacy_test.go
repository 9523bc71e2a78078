package e2e

import (
	"errors"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/practice-api/practice-api/shared/procnet"
)

// TestNoListenerBeyondLoopback: nothing the runtime starts listens on an
// address another machine could reach: the devserver or, under localcloud,
// its gateway, Lambda Runtime APIs, queue server and functions, and DynamoDB
// Local with every organisation's data, key hashes and webhook secrets.
func TestNoListenerBeyondLoopback(t *testing.T) {
	if api.local == nil {
		t.Skip("the suite did not start the runtime")
	}
	got, err := procnet.Listeners(api.local.Process.Pid)
	if errors.Is(err, procnet.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse(api.base)
	dynamo, _ := url.Parse(api.dynamo)
	var sawAPI, sawEngine bool
	for _, l := range got {
		if !l.Loopback() {
			t.Errorf("%s listens beyond loopback: %v", api.server, l)
		}
		sawAPI = sawAPI || l.Addr.String() == base.Host || strings.HasSuffix(base.Host, ":"+strconv.Itoa(int(l.Addr.Port())))
		sawEngine = sawEngine || strings.HasSuffix(dynamo.Host, ":"+strconv.Itoa(int(l.Addr.Port())))
	}
	// On make test's shared engine the runtime starts none (the tests of
	// the devserver's and localcloud's own engines check its listener).
	ownEngine := api.dynamo != os.Getenv("STORETEST_DYNAMODB_ENDPOINT")
	if !sawAPI || (ownEngine && !sawEngine) {
		t.Errorf("the API's (%s) or the engine's (%s) listener is missing from %v", base.Host, dynamo.Host, got)
	}
	t.Logf("%d listeners, all on loopback", len(got))
}

// TestNoCPRInAnyLogLine: a CPR number in a path or query (a client's
// mistake, or a probe) reaches no log line, the access lines (the app's, and
// under localcloud the gateway's) included.
func TestNoCPRInAnyLogLine(t *testing.T) {
	if api.local == nil || api.demoKey == "" {
		t.Skip("the suite did not start the runtime")
	}
	api.logs.watch("010190-1234", "0101901234", "010190%2D1234", "1501901234")
	for _, path := range []string{
		"/people/010190-1234", "/people/0101901234", "/matters/010190%2D1234",
		"/people?email=0101901234", "/matters?client_id=010190-1234", "/time-entries?matter_id=1501901234&x=0101901234",
	} {
		if r := get(t, path, api.demoKey); r.status >= 500 {
			t.Errorf("GET %s: %d", path, r.status)
		}
	}
	time.Sleep(time.Second) // the runtime's log lines arrive through a pipe
	for _, l := range api.logs.watchedLines() {
		t.Errorf("a log line holds the CPR number: %s", l)
	}
}
