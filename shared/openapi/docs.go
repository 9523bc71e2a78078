package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/practice-api/practice-api/shared/httpapi"
	"github.com/practice-api/practice-api/shared/httpapi/routes"
)

// The reference page, GET /api/v1/docs: Swagger UI (pinned in
// scripts/docs-viewer, copied here by make docs-assets) on this API's
// document, served from the API itself, not from a CDN.
//
//go:embed docs
var docsFS embed.FS

// asset is one embedded file, kept gzipped when it came so.
type asset struct {
	contentType string
	body        []byte // as stored
	gzipped     bool
	etag        string
	version     string // short hash for the page's ?v= cache busting
}

var assets = map[string]*asset{}

var page []byte
var pageETag string

func init() {
	load := func(name, stored, ctype string) *asset {
		b, err := docsFS.ReadFile("docs/" + stored)
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		a := &asset{contentType: ctype, body: b, gzipped: strings.HasSuffix(stored, ".gz"),
			etag: `"` + hex.EncodeToString(sum[:16]) + `"`, version: hex.EncodeToString(sum[:6])}
		assets[name] = a
		return a
	}
	js := load("swagger-ui-bundle.js", "swagger-ui-bundle.js.gz", "text/javascript; charset=utf-8")
	css := load("swagger-ui.css", "swagger-ui.css.gz", "text/css; charset=utf-8")
	starter := load("docs.js", "docs.js", "text/javascript; charset=utf-8")
	style := load("docs.css", "docs.css", "text/css; charset=utf-8")
	load("LICENSE-swagger-ui", "LICENSE-swagger-ui", "text/plain; charset=utf-8")
	html, err := docsFS.ReadFile("docs/index.html")
	if err != nil {
		panic(err)
	}
	// Plain substitution of constants we control (text/template would add
	// megabytes to the Lambda for five fields).
	page = []byte(strings.NewReplacer("{{.Prefix}}", routes.Prefix, "{{.JS}}", js.version, "{{.CSS}}", css.version,
		"{{.Init}}", starter.version, "{{.Style}}", style.version).Replace(string(html)))
	sum := sha256.Sum256(page)
	pageETag = `"` + hex.EncodeToString(sum[:16]) + `"`
}

// pagePolicy lets the page run only this server's scripts and talk only to
// this server (the console's requests).
const pagePolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func serveDocs(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("ETag", pageETag)
	h.Set("Cache-Control", "no-cache") // revalidated: a deployment shows its own page at once
	h.Set("Content-Security-Policy", pagePolicy)
	if httpapi.MatchesETag(r.Header.Get("If-None-Match"), pageETag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(page)
}

func serveAsset(w http.ResponseWriter, r *http.Request) {
	a, ok := assets[path.Base(r.PathValue("file"))]
	if !ok || path.Base(r.PathValue("file")) != r.PathValue("file") {
		httpapi.WriteError(w, r, httpapi.NotFound("documentation file"))
		return
	}
	h := w.Header()
	h.Set("ETag", a.etag)
	// The page names each file with ?v=<hash of its bytes>, so a cached copy
	// is never stale: keep it a year.
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("Vary", "Accept-Encoding")
	if httpapi.MatchesETag(r.Header.Get("If-None-Match"), a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", a.contentType)
	if !a.gzipped {
		_, _ = w.Write(a.body)
		return
	}
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		h.Set("Content-Encoding", "gzip")
		_, _ = w.Write(a.body)
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.body))
	if err != nil {
		httpapi.WriteError(w, r, err)
		return
	}
	_, _ = io.Copy(w, zr)
}
