package build

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"

	"github.com/practice-api/practice-api/shared/modroot"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// A guide page the reference links: the long prose lives there, not in
// the document's description, so the reference opens on its quickstart
// and operations. Each is rendered from the repository's Markdown when
// the document is built (make openapi) and served beside the reference
// (GET /api/v1/docs/<file>); TestGuidesAreCurrent keeps the committed
// pages equal to their sources.
type guide struct {
	File, Title, Source string // Source: a path under docs/, or "" for the receivers
}

// Guides are the pages, in the order of their navigation.
var Guides = []guide{
	{"guide.html", "Guide", "guide.md"},
	{"api.html", "Behaviour reference", "api.md"},
	{"receivers.html", "Webhook receivers", ""},
}

// RenderGuides returns each guide page by its file name.
func RenderGuides() (map[string][]byte, error) {
	out := map[string][]byte{}
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithAutoHeadingID(),
			parser.WithASTTransformers(util.Prioritized(links{}, 100))),
	)
	for _, g := range Guides {
		var src []byte
		if g.Source == "" {
			src = []byte(receivers())
		} else {
			var err error
			root, err := modroot.Find()
			if err != nil {
				return nil, err
			}
			if src, err = os.ReadFile(filepath.Join(root, "docs", g.Source)); err != nil {
				return nil, err
			}
		}
		var body bytes.Buffer
		ctx := parser.NewContext(parser.WithIDs(&githubIDs{seen: map[string]int{}}))
		if err := md.Convert(src, &body, parser.WithContext(ctx)); err != nil {
			return nil, fmt.Errorf("%s: %w", g.Source, err)
		}
		var nav []string
		nav = append(nav, `<a href="{{.Prefix}}/docs">API reference</a>`)
		for _, o := range Guides {
			if o.File == g.File {
				nav = append(nav, "<strong>"+o.Title+"</strong>")
			} else {
				nav = append(nav, `<a href="`+o.File+`">`+o.Title+`</a>`)
			}
		}
		page := "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
			"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n" +
			"<title>" + g.Title + " — Practice API v1</title>\n" +
			"<link rel=\"stylesheet\" href=\"{{.Prefix}}/docs/docs.css?v={{.Style}}\">\n</head>\n<body>\n<main class=\"pa-guide\">\n" +
			"<nav>" + strings.Join(nav, " · ") + "</nav>\n" + body.String() + "</main>\n</body>\n</html>\n"
		out[g.File] = []byte(page)
	}
	return out, nil
}

// githubIDs gives headings the ids GitHub gives them, so that links
// written for the repository (api.md#rate-limits, guide.md#…-updated_since)
// land on the served pages too: lower case, letters, digits, "-" and "_"
// kept, spaces made "-", everything else dropped; a repeated id gets -1, -2.
type githubIDs struct{ seen map[string]int }

func (g *githubIDs) Generate(value []byte, _ ast.NodeKind) []byte {
	var b strings.Builder
	for _, r := range strings.ToLower(string(value)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	id := b.String()
	if n := g.seen[id]; n > 0 {
		g.seen[id]++
		id = fmt.Sprintf("%s-%d", id, n)
	} else {
		g.seen[id] = 1
	}
	return []byte(id)
}

func (g *githubIDs) Put(value []byte) { g.seen[string(value)]++ }

// links points a link to another guide at its page (api.md#x →
// api.html#x) and keeps the text of a link to anything else of the
// repository (a source file, the README), which the server does not
// serve; links to the web stay.
type links struct{}

var mdLink = regexp.MustCompile(`^([a-z-]+)\.md(#.*)?$`)

func (links) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	served := map[string]string{}
	for _, g := range Guides {
		if g.Source != "" {
			served[strings.TrimSuffix(g.Source, ".md")] = g.File
		}
	}
	var unlink []*ast.Link
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		l, ok := n.(*ast.Link)
		if !entering || !ok {
			return ast.WalkContinue, nil
		}
		dest := string(l.Destination)
		switch m := mdLink.FindStringSubmatch(dest); {
		case strings.HasPrefix(dest, "https://"), strings.HasPrefix(dest, "#"):
		case m != nil && served[m[1]] != "":
			l.Destination = []byte(served[m[1]] + m[2])
		default:
			unlink = append(unlink, l)
		}
		return ast.WalkContinue, nil
	})
	for _, l := range unlink {
		parent := l.Parent()
		for c := l.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, l, c)
			c = next
		}
		parent.RemoveChild(parent, l)
	}
}
