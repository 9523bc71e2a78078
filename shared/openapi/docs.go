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

// The reference page, GET /api/v1/docs: Scalar's API reference (pinned in
// scripts/docs-viewer, copied here by make docs-assets) on this API's
// document, served from the API itself, not from a CDN; and the guide
// pages it links (rendered from docs/*.md by make openapi).
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
	page        bool   // a guide page: revalidated, under the page's policy
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
	js := load("scalar.js", "scalar.js.gz", "text/javascript; charset=utf-8")
	starter := load("docs.js", "docs.js", "text/javascript; charset=utf-8")
	style := load("docs.css", "docs.css", "text/css; charset=utf-8")
	load("LICENSE-scalar", "LICENSE-scalar", "text/plain; charset=utf-8")
	// Plain substitution of constants we control (text/template would add
	// megabytes to the Lambda for four fields).
	fill := strings.NewReplacer("{{.Prefix}}", routes.Prefix, "{{.JS}}", js.version,
		"{{.Init}}", starter.version, "{{.Style}}", style.version)
	for _, name := range GuidePages {
		b, err := docsFS.ReadFile("docs/" + name)
		if err != nil {
			panic(err)
		}
		b = []byte(fill.Replace(string(b)))
		sum := sha256.Sum256(b)
		assets[name] = &asset{contentType: "text/html; charset=utf-8", body: b, page: true,
			etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
	}
	html, err := docsFS.ReadFile("docs/index.html")
	if err != nil {
		panic(err)
	}
	page = []byte(fill.Replace(string(html)))
	sum := sha256.Sum256(page)
	pageETag = `"` + hex.EncodeToString(sum[:16]) + `"`
}

// GuidePages are the guide pages served beside the reference (the build
// package renders them, and its test holds the two lists equal).
var GuidePages = []string{"guide.html", "api.html", "receivers.html"}

// pagePolicy lets the pages run only this server's scripts and talk only
// to this server (the console's requests). Scalar's bundle adds its
// styles as a <style> element, hence 'unsafe-inline' for styles alone.
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
	if a.page {
		// A guide page is linked by its name alone: revalidated, so a
		// deployment shows its own at once.
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", pagePolicy)
	} else {
		// The pages name each file with ?v=<hash of its bytes>, so a cached
		// copy is never stale: keep it a year.
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
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
