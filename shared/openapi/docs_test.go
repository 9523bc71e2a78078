package openapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/practice-api/practice-api/shared/apitest"
	"github.com/practice-api/practice-api/shared/openapi"
)

// TestDocsPage: GET /api/v1/docs and its files are public, uncounted,
// cacheable with ETags, and come from this server.
func TestDocsPage(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, apitest.Options{})
	resp, err := http.Get(e.Server.URL + "/api/v1/docs")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := apitest.Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || r.Header.Get("X-RateLimit-Limit") != "" {
		t.Fatalf("GET /docs: %d %v", r.Status, r.Header)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
		t.Fatalf("CSP %q", csp)
	}
	html := string(r.Raw)
	if strings.Contains(html, "//cdn") || strings.Contains(html, "unpkg") || strings.Contains(html, "<script>") {
		t.Fatal("the page loads something from elsewhere, or runs inline script")
	}
	refs := regexp.MustCompile(`(?:src|href)="(/api/v1/docs/[^"?]+)\?v=([0-9a-f]{12})"`).FindAllStringSubmatch(html, -1)
	if len(refs) != 3 {
		t.Fatalf("the page names %d files, want 3 (Scalar, its start and the style): %s", len(refs), html)
	}
	for _, ref := range refs {
		for _, gz := range []bool{true, false} {
			req, _ := http.NewRequest("GET", e.Server.URL+ref[1]+"?v="+ref[2], nil)
			req.Header.Set("Accept-Encoding", map[bool]string{true: "gzip", false: "identity"}[gz])
			resp, err := http.DefaultTransport.RoundTrip(req) // no transparent gunzip
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || resp.Header.Get("ETag") == "" {
				t.Fatalf("%s: %d %v", ref[1], resp.StatusCode, resp.Header)
			}
			if resp.Header.Get("Content-Encoding") == "gzip" {
				if !gz {
					t.Fatalf("%s: gzip to a client that does not accept it", ref[1])
				}
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				body, _ = io.ReadAll(zr)
			}
			if len(body) == 0 {
				t.Fatalf("%s: empty", ref[1])
			}
			if strings.HasSuffix(ref[1], "scalar.js") && !bytes.Contains(body, []byte("createApiReference")) {
				t.Fatalf("%s is not Scalar's reference", ref[1])
			}
			req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
			again, _ := http.DefaultTransport.RoundTrip(req)
			again.Body.Close()
			if again.StatusCode != 304 {
				t.Fatalf("%s with its ETag: %d", ref[1], again.StatusCode)
			}
		}
	}
	apitest.MustStatus(t, e.Get("/api/v1/docs/nope.js", ""), 404)
	// The guide pages: public HTML under the page's policy, revalidated
	// (linked by name), linking back to the reference.
	for _, name := range openapi.GuidePages {
		g, err := http.Get(e.Server.URL + "/api/v1/docs/" + name)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(g.Body)
		g.Body.Close()
		if g.StatusCode != 200 || !strings.HasPrefix(g.Header.Get("Content-Type"), "text/html") || g.Header.Get("Cache-Control") != "no-cache" ||
			!strings.Contains(g.Header.Get("Content-Security-Policy"), "script-src 'self'") || !bytes.Contains(body, []byte(`href="/api/v1/docs"`)) ||
			bytes.Contains(body, []byte("{{")) {
			t.Fatalf("%s: %d %v\n%.300s", name, g.StatusCode, g.Header, body)
		}
	}
	req, _ := http.NewRequest("GET", e.Server.URL+"/api/v1/docs", nil)
	req.Header.Set("If-None-Match", r.Header.Get("ETag"))
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != 304 {
		t.Fatalf("page with its ETag: %d", resp.StatusCode)
	}
}

// TestDocsAssetsMatchThePin: the embedded Scalar bundle is the version pinned
// in scripts/docs-viewer, byte for byte when the package is installed
// (make docs-assets refreshes them).
func TestDocsAssetsMatchThePin(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	var pkg struct{ Dependencies map[string]string }
	raw, err := os.ReadFile(filepath.Join(root, "scripts", "docs-viewer", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	_ = json.Unmarshal(raw, &pkg)
	embedded, _ := os.ReadFile(filepath.Join(root, "shared", "openapi", "docs", "scalar.version"))
	if pin := pkg.Dependencies["@scalar/api-reference"]; strings.TrimSpace(string(embedded)) != pin {
		t.Fatalf("embedded Scalar %s, pinned %s: run make docs-assets", embedded, pin)
	}
	dist := filepath.Join(root, "scripts", "docs-viewer", "node_modules", "@scalar", "api-reference", "dist", "browser")
	if _, err := os.Stat(dist); err != nil {
		t.Skip("scripts/docs-viewer is not installed; the version check above passed")
	}
	for f, stored := range map[string]string{"standalone.js": "scalar.js.gz"} {
		want, _ := os.ReadFile(filepath.Join(dist, f))
		gz, _ := os.ReadFile(filepath.Join(root, "shared", "openapi", "docs", stored))
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(zr)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s differs from the pinned package: run make docs-assets", f)
		}
	}
}

// TestMetaBootstrapSize: the public Lambda serving the document and the
// reference page stays at or below 12 MB, built as make build builds it.
func TestMetaBootstrapSize(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		// A cross-compiled, stripped link of a whole Lambda: 25 s of make
		// unit's wall time under load, for a check no code change in the
		// fast loop needs at once. make test runs it.
		t.Skip("links a Lambda bootstrap (linux/arm64): skipped with -short; make test runs it")
	}
	out := filepath.Join(t.TempDir(), "bootstrap")
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", out, "../../functions/meta")
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, b)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("functions/meta bootstrap: %.2f MiB", float64(fi.Size())/(1<<20))
	// 8 MiB: meta links no store, key store nor AWS SDK service
	// (functions/deps_test.go) and embeds its document gzipped; it was
	// 8.13 MB (7.75 MiB) when this bound was set.
	if fi.Size() > 8<<20 {
		t.Fatalf("functions/meta bootstrap is %d bytes, over 8 MiB", fi.Size())
	}
}
