// Package openapi serves the API's OpenAPI 3.1 document, openapi.json,
// which shared/openapi/build generates (make openapi) and a test keeps
// equal to what the code describes.
package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"io"
	"net/http"

	"github.com/practice-api/practice-api/shared/httpapi"
)

// documentGzip is openapi.json as make openapi gzips it beside the file:
// the document is 432 KB of JSON and 35 KB gzipped, which is what the meta
// function carries (its binary under 8 MiB).
//
//go:embed openapi.json.gz
var documentGzip []byte

// Document is the OpenAPI document as served: openapi.json, byte for byte
// (the build package's test holds the file, its gzipped copy and what the
// code describes equal).
var Document = gunzip(documentGzip)

// gunzip reads the embedded copy once, at start (a few milliseconds).
func gunzip(gz []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		panic("openapi: openapi.json.gz: " + err.Error())
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		panic("openapi: openapi.json.gz: " + err.Error())
	}
	return b
}

// Gzip is doc as make openapi stores it (openapi.json.gz): gzip at the
// best compression, without a name or time, so the same document makes
// the same bytes.
func Gzip(doc []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // a valid level: no error
	_, _ = zw.Write(doc)
	_ = zw.Close()
	return buf.Bytes()
}

var etag = func() string {
	sum := sha256.Sum256(Document)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}()

// Handlers returns the handlers of the meta family: GET /openapi.json,
// public, cacheable for five minutes, with an ETag, and readable by
// documentation tools on other origins; and the reference page GET /docs
// with its files.
func Handlers() httpapi.Handlers {
	return httpapi.Handlers{"docs": serveDocs, "docs.asset": serveAsset, "openapi": func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("ETag", etag)
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("Access-Control-Allow-Origin", "*")
		if httpapi.MatchesETag(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(Document)
	}}
}
