package docs

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// testFuncs maps the name of every test and benchmark function of the repository to
// the files, relative to root, that declare one.
func testFuncs(t *testing.T) map[string][]string {
	t.Helper()
	funcs := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") ||
			d.Name() == "bin" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && isTestFunc(fn) {
				funcs[fn.Name.Name] = append(funcs[fn.Name.Name], rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return funcs
}

// isTestFunc is true of func TestX(*testing.T) and func BenchmarkX(*testing.B).
func isTestFunc(fn *ast.FuncDecl) bool {
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || pkg.Name != "testing" {
		return false
	}
	name := fn.Name.Name
	return (strings.HasPrefix(name, "Test") && sel.Sel.Name == "T") ||
		(strings.HasPrefix(name, "Benchmark") && sel.Sel.Name == "B")
}

// A wordKind says where addWords found a word; a word in a string wins.
type wordKind int

const (
	inIdent wordKind = iota + 1
	inString
)

// addWords adds to words the identifiers of a Go file and the words of its string
// literals, so that c.tfk8s(ctx, "local", "load", dir) yields tfk8s, local and load.
func addWords(words map[string]wordKind, file string) error {
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile(file, -1, len(src)), src, nil, 0)
	for {
		_, tok, lit := s.Scan()
		switch tok {
		case token.EOF:
			return nil
		case token.IDENT:
			words[lit] = max(words[lit], inIdent)
		case token.STRING:
			if v, err := strconv.Unquote(lit); err == nil {
				for _, w := range strings.FieldsFunc(v, notWordRune) {
					words[w] = inString
				}
			}
		}
	}
}

func notWordRune(r rune) bool {
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !strings.ContainsRune("-_.", r)
}

// makeTargets are the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	targets := map[string]bool{}
	re := regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*)\s*:([^=]|$)`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			targets[m[1]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return targets
}

var (
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	namedRE    = regexp.MustCompile("`((?:Test|Benchmark)[A-Z][A-Za-z0-9_]*)`")
	headingRE  = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
	slugDropRE = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// TestLinksResolve: every relative link of the docs names a file that exists and, with
// a #fragment, a heading of that file.
func TestLinksResolve(t *testing.T) {
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range linkRE.FindAllStringSubmatch(outsideCode(string(src)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := filepath.Join(root, filepath.Dir(f), file)
			if file == "" {
				path = filepath.Join(root, f)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if frag != "" && !anchors(t, path)[frag] {
				t.Errorf("%s: link %s: %s has no heading #%s", f, target, file, frag)
			}
		}
	}
}

// anchors are the fragments GitHub gives a Markdown file's headings.
func anchors(t *testing.T, path string) map[string]bool {
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a := map[string]bool{}
	for _, l := range strings.Split(outsideCode(string(src)), "\n") {
		if m := headingRE.FindStringSubmatch(l); m != nil {
			h := strings.ToLower(strings.NewReplacer("`", "", "*", "").Replace(m[1]))
			a[strings.ReplaceAll(slugDropRE.ReplaceAllString(h, ""), " ", "-")] = true
		}
	}
	return a
}

// outsideCode blanks the lines of fenced blocks, which hold no links or headings.
func outsideCode(src string) string {
	lines := strings.Split(src, "\n")
	in := false
	for i, l := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```") || strings.HasPrefix(strings.TrimSpace(l), "~~~")
		if in || fence {
			lines[i] = ""
		}
		if fence {
			in = !in
		}
	}
	return strings.Join(lines, "\n")
}

// TestNamedTestsExist: a test or benchmark the docs name as proof exists.
func TestNamedTestsExist(t *testing.T) {
	funcs := testFuncs(t)
	for _, f := range docFiles(t) {
		src, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range namedRE.FindAllStringSubmatch(string(src), -1) {
			if len(funcs[m[1]]) == 0 {
				t.Errorf("%s names %s, which no _test.go file declares", f, m[1])
			}
		}
	}
}

// TestReadmeIsShort keeps the README a page a newcomer reads in ten minutes.
func TestReadmeIsShort(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n"); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250: move the detail to docs/", n)
	}
}
