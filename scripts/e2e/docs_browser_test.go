package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/practice-api/practice-api/shared/httpapi/routes"
	"github.com/practice-api/practice-api/shared/outbox"
)

// chromium finds Debian's Chromium (or CHROMIUM_BIN).
func chromium() string {
	if p := os.Getenv("CHROMIUM_BIN"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestDocsPageInABrowser loads /api/v1/docs in headless Chromium: every
// operation of the route table and every webhook event is on the page, and
// its console, with the demo key typed into it, calls GET /matters and
// shows a 200 with data. The screenshot is kept in .bin/test-artifacts.
func TestDocsPageInABrowser(t *testing.T) {
	if api.demoKey == "" {
		t.Skip("needs the suite's own devserver and its demo key")
	}
	bin := chromium()
	if bin == "" && os.Getenv("DOCS_BROWSER_REQUIRED") == "1" {
		t.Fatal("Chromium is required here (DOCS_BROWSER_REQUIRED=1) but not installed: apt-get install chromium")
	}
	if bin == "" {
		t.Skip("Chromium is not installed: apt-get install chromium (make chromium does it; CI's .ci/run does it first)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1400, 2000))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	var ids []string
	var text string
	err := chromedp.Run(ctx,
		chromedp.Navigate(api.base+"/docs"),
		chromedp.WaitVisible(`.opblock-summary-operation-id`, chromedp.ByQuery),
		chromedp.Evaluate(`Array.from(document.querySelectorAll('.opblock-summary-operation-id')).map(e => e.textContent.trim())`, &ids),
		chromedp.Text(`#swagger-ui`, &text, chromedp.ByQuery),
	)
	if err != nil {
		t.Fatalf("loading the page: %v", err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	_ = json.Unmarshal(get(t, "/openapi.json", "").raw, &doc)
	var documented []string
	for _, item := range doc.Paths {
		for _, op := range item {
			documented = append(documented, op.OperationID)
		}
	}
	for _, rt := range routes.Table {
		want := rt.Name
		if rt.Name == "reports.get" { // one operation per report type, and one for any other
			want = "reports.unknown"
		}
		if !slices.Contains(ids, want) {
			t.Errorf("operation %s of the route table is not on the page", rt.Name)
		}
	}
	for _, id := range documented {
		if !slices.Contains(ids, id) {
			t.Errorf("documented operation %s is not on the page", id)
		}
	}
	for _, ev := range append(slices.Clone(outbox.Types), outbox.WebhookTest) {
		if !strings.Contains(text, string(ev)) {
			t.Errorf("webhook event %s is not on the page", ev)
		}
	}
	// The four receivers to copy, as code on the page: Go, Python, Node, and
	// Node on the Standard Webhooks library.
	receivers := map[string]string{"Go": "signature.VerifyAny(", "Python": "hmac.compare_digest(", "Node": "timingSafeEqual(", "Standard Webhooks": "new Webhook(secret).verify("}
	for lang, marker := range receivers {
		if !strings.Contains(text, marker) {
			t.Errorf("the %s receiver (%s) is not on the page", lang, marker)
		}
	}
	var codeBlocks int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('.info pre code')).filter(e => /WEBHOOK_SECRETS_FILE/.test(e.textContent)).length`, &codeBlocks)); err != nil || codeBlocks != len(receivers) {
		t.Errorf("%d receiver code blocks in the page's introduction, want %d (%v)", codeBlocks, len(receivers), err)
	}

	// The console: authorize with the demo key, try GET /matters. Each step
	// has its own time limit, so a failure names the step.
	op := `[id="operations-Matters-matters\\.list"]` // Swagger UI escapes the dot of the id with a backslash
	var status, body string
	steps := []struct {
		name   string
		action chromedp.Action
	}{
		{"open Authorize", chromedp.Click(`.auth-wrapper .btn.authorize`, chromedp.ByQuery)},
		{"type the key", chromedp.SendKeys(`.modal-ux input`, api.demoKey, chromedp.ByQuery)},
		{"authorize", chromedp.Click(`.modal-ux .auth-btn-wrapper .btn.modal-btn.auth.authorize`, chromedp.ByQuery)},
		{"close the dialog", chromedp.Click(`.modal-ux .btn-done`, chromedp.ByQuery)},
		{"dialog closed", chromedp.WaitNotPresent(`.modal-ux`, chromedp.ByQuery)},
		{"expand GET /matters", chromedp.Click(op+` .opblock-summary-control`, chromedp.ByQuery)},
		{"Try it out", chromedp.Click(op+` .try-out__btn`, chromedp.ByQuery)},
		{"Execute", chromedp.Click(op+` .execute`, chromedp.ByQuery)},
		{"the answer's status", chromedp.Text(op+` .live-responses-table tbody .response-col_status`, &status, chromedp.ByQuery)},
		{"the answer's body", chromedp.Text(op+` .live-responses-table tbody .response-col_description`, &body, chromedp.ByQuery)},
	}
	var failed error
	for _, st := range steps {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := chromedp.Run(sctx, st.action)
		cancel()
		if err != nil {
			var blocks []string
			dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
			_ = chromedp.Run(dctx, chromedp.Evaluate(`Array.from(document.querySelectorAll('.opblock')).slice(0, 4).map(e => e.id)`, &blocks))
			dcancel()
			failed = fmt.Errorf("step %q: %w (first operation blocks: %v)", st.name, err, blocks)
			break
		}
	}
	// Screenshots: the whole page, and the window where the console answered.
	var full, window []byte
	sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
	defer scancel()
	if serr := chromedp.Run(sctx, chromedp.FullScreenshot(&full, 100),
		chromedp.ScrollIntoView(op+` .responses-wrapper`, chromedp.ByQuery), chromedp.CaptureScreenshot(&window)); serr == nil {
		dir := filepath.Join(api.root, ".bin", "test-artifacts")
		_ = os.MkdirAll(dir, 0o755)
		for name, b := range map[string][]byte{"docs-page.png": full, "docs-console.png": window} {
			if werr := os.WriteFile(filepath.Join(dir, name), b, 0o644); werr == nil {
				t.Logf("screenshot: %s", filepath.Join(dir, name))
			}
		}
	}
	if failed != nil {
		t.Fatalf("using the console: %v", failed)
	}
	if !strings.HasPrefix(strings.TrimSpace(status), "200") || !strings.Contains(body, `"data"`) || !strings.Contains(body, `"matter_number"`) {
		t.Fatalf("the console's GET /matters: status %q, body %.300q", status, body)
	}
}
