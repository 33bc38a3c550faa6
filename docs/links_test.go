// Package docs holds the documentation pages; its test keeps their links
// true.
package docs

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, relative to this directory.
const root = ".."

// skipDirs are never searched for pages: dependencies. Hidden directories
// are skipped too.
var skipDirs = []string{"node_modules"}

// page is what the test reads from one Markdown file.
type page struct {
	links   []link
	anchors map[string]bool
}

type link struct {
	line   int
	target string
}

var (
	// inlineLink matches [text](target) and ![alt](target); the target
	// ends at white space (a title may follow) or the closing parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// htmlAnchor matches an explicit anchor in inline HTML.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	// linkText keeps the text of a link inside a heading.
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// readPage collects the links and heading anchors of a Markdown file,
// skipping fenced code blocks and code spans, where brackets are not links.
// Links are searched in the whole text, since a link's text may be wrapped
// over lines.
func readPage(b []byte) page {
	p := page{anchors: map[string]bool{}}
	seen := map[string]int{}
	fence := ""
	var prose strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			line = ""
		case strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			line = ""
		default:
			if h, ok := heading(trimmed); ok {
				slug := slugify(h)
				// GitHub numbers repeated headings: x, x-1, x-2.
				if n := seen[slug]; n > 0 {
					p.anchors[fmt.Sprintf("%s-%d", slug, n)] = true
				} else {
					p.anchors[slug] = true
				}
				seen[slug]++
			}
			for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
				p.anchors[m[1]] = true
			}
		}
		prose.WriteString(codeSpan.ReplaceAllString(line, ""))
		prose.WriteByte('\n')
	}
	text := prose.String()
	for _, m := range inlineLink.FindAllStringSubmatchIndex(text, -1) {
		line := 1 + strings.Count(text[:m[0]], "\n")
		p.links = append(p.links, link{line: line, target: text[m[2]:m[3]]})
	}
	return p
}

// heading returns the text of an ATX heading line.
func heading(line string) (string, bool) {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(line) && line[n] != ' ') {
		return "", false
	}
	return strings.TrimRight(strings.TrimSpace(line[n:]), "# "), true
}

// slugify makes a heading's anchor as GitHub does: the rendered text in
// lower case, without punctuation other than '-' and '_', spaces as '-'.
func slugify(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// external reports a link the test cannot check offline.
func external(target string) bool {
	u, err := url.Parse(target)
	return err == nil && u.Scheme != ""
}

// readPages reads every Markdown file of the repository, keyed by its path
// relative to the repository with '/' separators.
func readPages(t *testing.T) map[string]page {
	t.Helper()
	pages := map[string]page{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skipDirs, d.Name())) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(d.Name(), ".md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		pages[filepath.ToSlash(rel)] = readPage(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pages["README.md"]; !ok {
		t.Fatal("no README.md at the repository's root")
	}
	return pages
}

// broken returns what is wrong with a link of the page at from, or "".
func broken(pages map[string]page, from string, l link) string {
	if external(l.target) {
		return ""
	}
	target, frag, _ := strings.Cut(l.target, "#")
	unescaped, err := url.PathUnescape(target)
	if err != nil {
		return "not a valid path"
	}
	if strings.HasPrefix(unescaped, "/") {
		return "an absolute path: links must be relative to the page"
	}
	file := from
	if unescaped != "" {
		file = path.Join(path.Dir(from), unescaped)
		if file == ".." || strings.HasPrefix(file, "../") {
			return "outside the repository"
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
			return "no such file or directory"
		}
	}
	if frag == "" {
		return ""
	}
	p, ok := pages[file]
	if !ok {
		return "" // an anchor into a non-Markdown file (a line of code) is the host's business
	}
	if !p.anchors[frag] {
		return fmt.Sprintf("no heading or anchor #%s in %s", frag, file)
	}
	return ""
}

// TestLinks: every relative link and anchor in the repository's Markdown
// files leads somewhere.
func TestLinks(t *testing.T) {
	pages := readPages(t)
	checked := 0
	for from, p := range pages {
		for _, l := range p.links {
			checked++
			if why := broken(pages, from, l); why != "" {
				t.Errorf("%s:%d: link %q: %s", from, l.line, l.target, why)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no links found: the reader is broken")
	}
}

// TestIndexes: every page of docs/ is linked from the README and from the
// docs index.
func TestIndexes(t *testing.T) {
	pages := readPages(t)
	linked := func(from string) map[string]bool {
		out := map[string]bool{}
		for _, l := range pages[from].links {
			target, _, _ := strings.Cut(l.target, "#")
			if !external(l.target) && target != "" {
				out[path.Join(path.Dir(from), target)] = true
			}
		}
		return out
	}
	readme, index := linked("README.md"), linked("docs/README.md")
	n := 0
	for name := range pages {
		if path.Dir(name) != "docs" || name == "docs/README.md" {
			continue
		}
		n++
		if !readme[name] {
			t.Errorf("README.md does not link %s", name)
		}
		if !index[name] {
			t.Errorf("docs/README.md does not link %s", name)
		}
	}
	if n == 0 {
		t.Fatal("no pages in docs/")
	}
	if !readme["docs/README.md"] {
		t.Error("README.md does not link docs/README.md")
	}
}

// TestReader: the reader finds links and anchors where GitHub renders them
// and nowhere else, and broken reports each kind of broken link.
func TestReader(t *testing.T) {
	md := []byte("# Title `code` here\n\n## Title code here\n\n## A, b & c: d_e (f)\n\n" +
		"<a id=\"custom\"></a>\n\nSee [a](x.md#sec \"title\"), ![i](img/p.png), `[no](code.md)` and [wrapped\ntext](z.md).\n\n" +
		"```\n[no](fenced.md)\n## not a heading\n```\n\n### [Linked](y.md) heading ###\n")
	p := readPage(md)
	for _, want := range []string{"title-code-here", "title-code-here-1", "a-b--c-d_e-f", "custom", "linked-heading"} {
		if !p.anchors[want] {
			t.Errorf("anchor %q not found in %v", want, p.anchors)
		}
	}
	if p.anchors["not-a-heading"] {
		t.Error("a heading inside a fenced block was read")
	}
	var targets []string
	for _, l := range p.links {
		targets = append(targets, l.target)
	}
	if want := []string{"x.md#sec", "img/p.png", "z.md", "y.md"}; !slices.Equal(targets, want) {
		t.Errorf("links %q, want %q", targets, want)
	} else if p.links[2].line != 9 {
		t.Errorf("the wrapped link is on line %d, want 9", p.links[2].line)
	}

	pages := map[string]page{
		"README.md": readPage([]byte("# Top\n\n## Read on\n")),
		"docs/a.md": readPage([]byte("# A\n")),
	}
	for _, tc := range []struct {
		target string
		ok     bool
	}{
		{"https://example.com/x#y", true},
		{"../README.md#read-on", true},
		{"#a", true},
		{"links_test.go", true},
		{"../README.md#missing", false},
		{"#missing", false},
		{"missing.md", false},
		{"/README.md", false},
		{"../../outside.md", false},
	} {
		if got := broken(pages, "docs/a.md", link{target: tc.target}) == ""; got != tc.ok {
			t.Errorf("link %q from docs/a.md: ok = %v, want %v", tc.target, got, tc.ok)
		}
	}
}
