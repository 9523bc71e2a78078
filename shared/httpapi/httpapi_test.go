package httpapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/body"
	"github.com/practice-api/practice-api/shared/store"
)

func TestNewHandlerChecksTheRouteTable(t *testing.T) {
	t.Parallel()
	ok := func(http.ResponseWriter, *http.Request) {}
	if _, err := NewHandler(Config{}, map[string]Handlers{"matters": {"matters.list": ok}}); err == nil {
		t.Fatal("a family missing a route's handler was accepted")
	}
	if _, err := NewHandler(Config{}, map[string]Handlers{"matters": {"matters.list": ok, "matters.get": ok, "matters.delete": ok}}); err == nil {
		t.Fatal("a handler for no route was accepted")
	}
}

func TestPanicBecomesJSON500(t *testing.T) {
	t.Parallel()
	var logged bytes.Buffer
	cfg := Config{Log: slog.New(slog.NewTextHandler(&logged, nil))} // the panic is expected: its log goes here
	cfg.defaults()
	h := cfg.edge(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/matters", nil))
	var body map[string]string
	if rec.Code != 500 || json.Unmarshal(rec.Body.Bytes(), &body) != nil || !strings.Contains(body["message"], rec.Header().Get("X-Request-Id")) {
		t.Fatalf("panic: %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "boom") {
		t.Fatal("panic value leaked to the client")
	}
	if !strings.Contains(logged.String(), "boom") || !strings.Contains(logged.String(), rec.Header().Get("X-Request-Id")) {
		t.Fatalf("the panic was not logged with its request id to the handler's logger: %q", logged.String())
	}
}

func TestChunkedBodyOverLimitIs413(t *testing.T) {
	t.Parallel()
	cfg := Config{MaxBodyBytes: 10}
	cfg.defaults()
	h := cfg.edge(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v any
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			WriteError(w, r, err)
		}
	}))
	req := httptest.NewRequest("POST", "/x", bytes.NewReader([]byte(`{"a":"0123456789"}`)))
	req.ContentLength = -1 // unknown length: only the reader can enforce the limit
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 413 {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

func TestCursorSealing(t *testing.T) {
	t.Parallel()
	s, err := NewSealer(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewSealer(bytes.Repeat([]byte{8}, 32))
	c := cursor{Org: "o", Resource: "matters", Filter: json.RawMessage(`{"status":"active"}`), After: store.StartKey{"PK": "O#o"}}
	sealed, err := s.seal(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.open(sealed)
	if err != nil || got.Org != "o" || got.After["PK"] != "O#o" || string(got.Filter) != `{"status":"active"}` {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if strings.Contains(sealed, "active") {
		t.Fatal("cursor is not opaque")
	}
	if _, err := other.open(sealed); err == nil {
		t.Fatal("a cursor opened under another key")
	}
	for i := range sealed {
		b := []byte(sealed)
		b[i] ^= 0x01
		if _, err := s.open(string(b)); err == nil && string(b) != sealed {
			t.Fatalf("flipping byte %d still opens", i)
		}
	}
	for _, junk := range []string{"", "a", "!!!!", strings.Repeat("A", 5000)} {
		if _, err := s.open(junk); err == nil {
			t.Fatalf("junk %q opened", junk)
		}
	}
}

func FuzzCursorOpen(f *testing.F) {
	s, _ := NewSealer(bytes.Repeat([]byte{7}, 32))
	good, _ := s.seal(cursor{Org: "o", Resource: "r"})
	f.Add(good)
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		_, _ = s.open(v) // must not panic
	})
}

// TestErrorsStayWithinTheirBounds: a message that quotes what the caller
// sent (an unknown field's name, here 5,000 characters of it) is cut to
// MaxMessage characters and the field to MaxField, ending with "…", as
// the OpenAPI document promises; short ones are left alone.
func TestErrorsStayWithinTheirBounds(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("å", 5000)
	b, err := body.Decode([]byte(`{"` + long + `":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b.String("name", false, 10)
	w := httptest.NewRecorder()
	WriteError(w, httptest.NewRequest("POST", "/", nil), b.Err())
	var got struct {
		Message string `json:"message"`
		Field   string `json:"field"`
		Errors  []struct{ Field, Message string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 422 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	runes := func(s string) int { return len([]rune(s)) }
	if runes(got.Message) != MaxMessage || runes(got.Field) != MaxField || !strings.HasSuffix(got.Field, "…") ||
		runes(got.Errors[0].Field) != MaxField || runes(got.Errors[0].Message) != MaxMessage {
		t.Fatalf("message %d, field %d, errors[0] %d/%d characters", runes(got.Message), runes(got.Field), runes(got.Errors[0].Field), runes(got.Errors[0].Message))
	}
	if Clip("kort", 10) != "kort" || Clip("abcdef", 4) != "abc…" {
		t.Fatal("Clip changed a short string or cut a long one wrong")
	}
}
