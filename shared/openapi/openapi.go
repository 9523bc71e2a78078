// Package openapi serves the API's OpenAPI 3.1 document, openapi.json,
// which shared/openapi/build generates (make openapi) and a test keeps
// equal to what the code describes.
package openapi

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"

	"github.com/practice-api/practice-api/shared/httpapi"
)

// Document is the OpenAPI document as served.
//
//go:embed openapi.json
var Document []byte

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
