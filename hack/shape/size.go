package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"strings"
)

// The limits: a function or a file beyond them does more than one thing.
const (
	maxFuncLines = 80
	maxFileLines = 500
)

// checkFile returns the offences of one Go file, path relative to the root of the
// tree: its length, and the length of each function unless it is a test file. Files
// under testdata are fixtures, not code; generated files are left to their generator,
// and the API's type files are mostly documentation of fields.
func checkFile(name string, src []byte) ([]string, error) {
	if inTestdata(name) {
		return nil, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) || strings.HasPrefix(path.Base(name), "zz_generated") {
		return nil, nil
	}
	var offenders []string
	if lines := bytes.Count(src, []byte("\n")); lines > maxFileLines && !isAPITypes(name) {
		offenders = append(offenders, fmt.Sprintf("%s:1: file is %d lines (max %d)", name, lines, maxFileLines))
	}
	if strings.HasSuffix(name, "_test.go") {
		return offenders, nil
	}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		start, end := fset.Position(fn.Pos()).Line, fset.Position(fn.End()).Line
		if lines := end - start + 1; lines > maxFuncLines {
			offenders = append(offenders, fmt.Sprintf("%s:%d: func %s is %d lines (max %d)", name, start, funcName(fn), lines, maxFuncLines))
		}
	}
	return offenders, nil
}

// funcName is a function's name, a method's prefixed by its receiver's type.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if index, ok := t.(*ast.IndexExpr); ok { // a generic type's method
		t = index.X
	}
	if ident, ok := t.(*ast.Ident); ok {
		return ident.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// isAPITypes reports whether name is one of the API's type files, api/<version>/*_types.go.
func isAPITypes(name string) bool {
	ok, _ := path.Match("api/*/*_types.go", name)
	return ok
}

// inTestdata reports whether name lies under a testdata directory, which go build skips.
func inTestdata(name string) bool {
	return strings.HasPrefix(name, "testdata/") || strings.Contains(name, "/testdata/")
}
