package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/practice-api/practice-api/shared/httpapi"
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

// TestDocsPageInABrowser loads /api/v1/docs in headless Chromium, as an
// integrator would use it:
//   - the page opens on its quickstart, before any operation;
//   - the sidebar names every operation of the document and every webhook
//     event (and so every route of the table);
//   - navigation: a click in the sidebar and a search each bring an
//     operation into view, at its own address;
//   - errors: the quickstart links the Errors section, a search for
//     "error" finds it, and its table lists every code with no word
//     broken across two lines;
//   - a sample: an operation's request example switches between curl, Go,
//     Python and Node, each naming the operation's path;
//   - the console: with the demo key typed into the page, Test Request on
//     GET /matters shows a 200 with matters;
//   - the guide pages it links load, the receivers with their code.
//
// Screenshots are kept in .bin/test-artifacts.
func TestDocsPageInABrowser(t *testing.T) {
	t.Parallel() // the suite's slow tests (each writes only to an organisation of its own) run beside each other once the rest is done
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
		chromedp.Flag("disable-sync", true), chromedp.WindowSize(1400, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	// The browser starts on ctx itself: a step's context, cancelled when the
	// step ends, would take the browser with it.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	shots := map[string][]byte{}
	defer func() {
		dir := filepath.Join(api.root, ".bin", "test-artifacts")
		_ = os.MkdirAll(dir, 0o755)
		for name, b := range shots {
			if werr := os.WriteFile(filepath.Join(dir, name), b, 0o644); werr == nil {
				t.Logf("screenshot: %s", filepath.Join(dir, name))
			}
		}
	}()
	// step runs one step under its own time limit, so a failure names it.
	step := func(name string, actions ...chromedp.Action) {
		t.Helper()
		sctx, scancel := context.WithTimeout(ctx, 45*time.Second)
		defer scancel()
		if err := chromedp.Run(sctx, actions...); err != nil {
			var shot []byte
			dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
			_ = chromedp.Run(dctx, chromedp.CaptureScreenshot(&shot))
			dcancel()
			shots["docs-failed.png"] = shot
			t.Fatalf("step %q: %v", name, err)
		}
	}
	const sidebar = `.t-doc__sidebar`
	var entries []string
	var quickstartFirst bool
	step("load the page", chromedp.Navigate(api.base+"/docs"), chromedp.WaitVisible(sidebar, chromedp.ByQuery),
		chromedp.WaitVisible(`[id$="/description/quickstart"]`, chromedp.ByQuery))
	step("read the sidebar", chromedp.Evaluate(`[...document.querySelectorAll('.t-doc__sidebar a')].map(e => e.textContent.trim())`, &entries),
		chromedp.Evaluate(`(() => {
			const q = document.querySelector('[id$="/description/quickstart"]');
			const op = document.querySelector('[id*="/tag/"][id*="/GET/"], [id*="/tag/"][id*="/POST/"]');
			return !!q && (!op || !!(q.compareDocumentPosition(op) & Node.DOCUMENT_POSITION_FOLLOWING));
		})()`, &quickstartFirst))
	if !quickstartFirst {
		t.Error("the page does not open on its quickstart before the operations")
	}
	var doc struct {
		Paths    map[string]map[string]struct{ Summary, OperationID string } `json:"paths"`
		Webhooks map[string]map[string]struct{ Summary string }              `json:"webhooks"`
	}
	if err := json.Unmarshal(get(t, "/openapi.json", "").raw, &doc); err != nil {
		t.Fatal(err)
	}
	onSidebar := func(summary string) bool {
		return slices.ContainsFunc(entries, func(e string) bool { return strings.HasPrefix(e, summary) })
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths {
		for method, op := range item {
			documented[op.OperationID] = true
			if !onSidebar(op.Summary) {
				t.Errorf("%s %s (%q) is not in the sidebar", strings.ToUpper(method), path, op.Summary)
			}
		}
	}
	for _, rt := range routes.Table {
		if want := map[bool]string{true: "reports.unknown", false: rt.Name}[rt.Name == "reports.get"]; !documented[want] {
			t.Errorf("route %s has no operation on the page", rt.Name)
		}
	}
	for _, ev := range append(slices.Clone(outbox.Types), outbox.WebhookTest) {
		hook, ok := doc.Webhooks[string(ev)]
		if !ok || !onSidebar(hook["post"].Summary) {
			t.Errorf("webhook event %s is not in the sidebar", ev)
		}
	}

	// search enters a query into the search dialog at once, as pasted:
	// typed a key at a time, the page searches and draws its results
	// after each one (2 s of the browser's CPU a search).
	search := func(q string) chromedp.Action {
		return chromedp.Evaluate(`(() => {
			const input = document.querySelector('[role="dialog"] input[type="search"]');
			input.focus();
			input.value = `+strconv.Quote(q)+`;
			input.dispatchEvent(new Event('input', { bubbles: true }));
		})()`, nil)
	}

	// Navigation: the sidebar, then the search.
	var hash string
	var shot []byte
	const timeEntries = `[id="api-1/tag/time-entries/GET/time-entries"]`
	step("click List time entries in the sidebar",
		chromedp.Evaluate(`[...document.querySelectorAll('.t-doc__sidebar a')].find(e => e.textContent.trim().startsWith('List time entries')).click()`, nil),
		chromedp.WaitVisible(timeEntries, chromedp.ByQuery), chromedp.Evaluate(`location.hash`, &hash))
	if hash != "#tag/time-entries/GET/time-entries" {
		t.Errorf("the sidebar's link led to %q", hash)
	}
	step("search for receivables",
		chromedp.Evaluate(`[...document.querySelectorAll('.t-doc__sidebar button')].find(e => e.textContent.includes('Open Search')).click()`, nil),
		chromedp.WaitVisible(`[role="dialog"] input[type="search"]`, chromedp.ByQuery),
		search("receivables"),
		chromedp.WaitVisible(`[id="search-result-api-1/tag/reports/GET/reports/receivables-aging"]`, chromedp.ByQuery),
		chromedp.Click(`[id="search-result-api-1/tag/reports/GET/reports/receivables-aging"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`[id="api-1/tag/reports/GET/reports/receivables-aging"]`, chromedp.ByQuery),
		chromedp.Evaluate(`location.hash`, &hash))
	if hash != "#tag/reports/GET/reports/receivables-aging" {
		t.Errorf("the search's result led to %q", hash)
	}

	// The Errors section: linked from the quickstart, found by searching
	// "error", and its table of codes with no word broken across lines.
	const errorsID = `api-1/description/errors-and-error-codes`
	// (The introduction stays on the page wherever it is scrolled to: the
	// link is followed from here, without loading the page again.)
	step("the quickstart's link to the Errors section",
		chromedp.Evaluate(`[...document.querySelectorAll('[id="api-1/description/introduction"] a')].find(a => a.getAttribute('href') === '#description/errors-and-error-codes').click()`, nil),
		chromedp.WaitVisible(`h2[id="`+errorsID+`"]`, chromedp.ByQuery), chromedp.Evaluate(`location.hash`, &hash))
	if hash != "#description/errors-and-error-codes" {
		t.Errorf("the quickstart's Errors link led to %q", hash)
	}
	step("search for error",
		chromedp.Navigate(api.base+"/docs#tag/matters/GET/matters"), chromedp.WaitVisible(`[id="api-1/tag/matters/GET/matters"]`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('.t-doc__sidebar button')].find(e => e.textContent.includes('Open Search')).click()`, nil),
		chromedp.WaitVisible(`[role="dialog"] input[type="search"]`, chromedp.ByQuery),
		search("error"),
		chromedp.WaitVisible(`[id="search-result-`+errorsID+`"]`, chromedp.ByQuery),
		chromedp.Click(`[id="search-result-`+errorsID+`"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`h2[id="`+errorsID+`"]`, chromedp.ByQuery),
		chromedp.Evaluate(`location.hash`, &hash))
	if hash != "#description/errors-and-error-codes" {
		t.Errorf("the search's Errors result led to %q", hash)
	}
	// Every word of every cell of the section's table is on one line: a
	// word the layout broke has two boxes.
	var table struct {
		Codes  []string `json:"codes"`
		Broken []string `json:"broken"`
	}
	step("the table of codes", chromedp.Evaluate(`(() => {
		const h = document.querySelector('h2[id="`+errorsID+`"]');
		const section = h.closest('.introduction-description-heading');
		let el = section && section.nextElementSibling, tbl = null;
		for (; el && !tbl; el = el.nextElementSibling) tbl = el.querySelector('table');
		if (!tbl) return {codes: [], broken: ['no table after the heading']};
		tbl.scrollIntoView();
		const broken = [], range = document.createRange();
		for (const cell of tbl.querySelectorAll('th, td')) {
			const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
			for (let t; (t = walk.nextNode());) {
				for (const m of t.data.matchAll(/\S+/g)) {
					range.setStart(t, m.index); range.setEnd(t, m.index + m[0].length);
					if ([...range.getClientRects()].filter(r => r.width > 0).length > 1) broken.push(m[0]);
				}
			}
		}
		return {codes: [...tbl.querySelectorAll('tbody tr td:first-child')].map(td => td.textContent.trim()), broken};
	})()`, &table), chromedp.CaptureScreenshot(&shot))
	shots["docs-errors.png"] = shot
	for _, c := range httpapi.Codes {
		if !slices.Contains(table.Codes, string(c.Code)) {
			t.Errorf("the Errors section's table lacks %s (it lists %v)", c.Code, table.Codes)
		}
	}
	if len(table.Broken) > 0 {
		t.Errorf("words broken across lines in the Errors table: %q", table.Broken)
	}

	// A sample in each language, for GET /time-entries.
	step("back to List time entries", chromedp.Navigate(api.base+"/docs#tag/time-entries/GET/time-entries"),
		chromedp.WaitVisible(timeEntries+` [data-testid="client-picker"]`, chromedp.ByQuery))
	sample := `(() => {
		const card = document.querySelector('[id="api-1/tag/time-entries/GET/time-entries"] [data-testid="client-picker"]').closest('.scalar-card');
		return card ? card.textContent : '';
	})()`
	for _, c := range []struct{ client, says string }{
		{"go/native", "http.NewRequest"}, {"python/requests", "requests.get"}, {"node/fetch", "fetch("}, {"shell/curl", "curl"},
	} {
		var code string
		// The picker is clicked until its options show: on a loaded machine
		// the page may still be scrolling to the operation and re-rendering
		// it when the first click lands, and that click is lost.
		option := `li[role="option"][id$="-` + c.client + `"]`
		openPicker := `(() => {
			if (document.querySelector(` + strconv.Quote(option) + `)) return true;
			const p = document.querySelector(` + strconv.Quote(timeEntries+` [data-testid="client-picker"]`) + `);
			if (p) { p.scrollIntoView(); p.click(); }
			return false;
		})()`
		step("the "+c.client+" sample",
			chromedp.Poll(openPicker, nil, chromedp.WithPollingInterval(time.Second), chromedp.WithPollingTimeout(40*time.Second)),
			chromedp.Click(option, chromedp.ByQuery),
			chromedp.Poll(sample+`.includes(`+strconv.Quote(c.says)+`)`, nil, chromedp.WithPollingTimeout(10*time.Second)),
			chromedp.Evaluate(sample, &code))
		if !strings.Contains(code, "/time-entries") {
			t.Errorf("the %s sample does not name /time-entries: %.300q", c.client, code)
		}
	}
	step("screenshot of the operation", chromedp.CaptureScreenshot(&shot))
	shots["docs-operation.png"] = shot

	// The console: the key typed into the page, Test Request, Send.
	var status, body string
	const matters = `[id="api-1/tag/matters/GET/matters"]`
	step("open List matters", chromedp.Navigate(api.base+"/docs#tag/matters/GET/matters"), chromedp.WaitVisible(matters, chromedp.ByQuery))
	// Pasted, as people enter keys: typed a character at a time the page
	// re-renders on each, which takes a loaded machine longer than a step.
	step("paste the key", chromedp.Evaluate(`(() => {
		const input = document.querySelector('input[placeholder="Token"]');
		input.focus();
		input.value = `+strconv.Quote(api.demoKey)+`;
		input.dispatchEvent(new Event('input', { bubbles: true }));
		input.dispatchEvent(new Event('change', { bubbles: true }));
	})()`, nil))
	step("Test Request", chromedp.Evaluate(`[...document.querySelectorAll('[id="api-1/tag/matters/GET/matters"] button')].find(b => /Test Request/.test(b.textContent)).click()`, nil),
		chromedp.WaitVisible(`button[data-addressbar-action="send"]`, chromedp.ByQuery))
	step("Send", chromedp.Click(`button[data-addressbar-action="send"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`.animate-response-children a[href*="Status/"]`, chromedp.ByQuery),
		chromedp.Text(`.animate-response-children a[href*="Status/"]`, &status, chromedp.ByQuery),
		chromedp.Poll(`[...document.querySelectorAll('.cm-content')].some(e => e.textContent.includes('matter_number'))`, nil, chromedp.WithPollingTimeout(10*time.Second)),
		chromedp.Evaluate(`[...document.querySelectorAll('.cm-content')].map(e => e.textContent).join('\n')`, &body),
		chromedp.CaptureScreenshot(&shot))
	shots["docs-console.png"] = shot
	if !strings.HasPrefix(strings.TrimSpace(status), "200") || !strings.Contains(body, `"data"`) || !strings.Contains(body, `"matter_number"`) {
		t.Errorf("the console's GET /matters: status %q, body %.300q", status, body)
	}

	// The guide pages the reference links.
	var receivers string
	step("the receivers' page", chromedp.Navigate(api.base+"/docs/receivers.html"), chromedp.WaitVisible(`main.pa-guide`, chromedp.ByQuery),
		chromedp.Text(`main.pa-guide`, &receivers, chromedp.ByQuery))
	for lang, marker := range map[string]string{"Go": "signature.VerifyAny(", "Python": "hmac.compare_digest(", "Node": "timingSafeEqual(", "Standard Webhooks": "new Webhook(secret).verify("} {
		if !strings.Contains(receivers, marker) {
			t.Errorf("the %s receiver (%s) is not on the receivers' page", lang, marker)
		}
	}
	var back int
	step("the guide links back", chromedp.Navigate(api.base+"/docs/guide.html"), chromedp.WaitVisible(`main.pa-guide h1`, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('main.pa-guide nav a[href$="/docs"]').length`, &back))
	if back != 1 {
		t.Errorf("the guide has %d links back to the reference", back)
	}
}
