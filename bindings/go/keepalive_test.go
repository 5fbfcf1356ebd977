package ctxpack_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"strings"
	"testing"
)

// The package's rule for library pointers (memory.go): a function that takes the pointer
// of an object (x.ptr()) registers `defer runtime.KeepAlive(x)` (or `defer x.Close()`)
// as a top-level statement before its first use, so x stays reachable, and its finalizer
// cannot run, until the function returns, whatever C calls or helpers follow. A
// runtime.KeepAlive anywhere else is the pattern that let a finalizer free a pipeline
// while a result was still being read, and is rejected too.
//
// This test checks the rule on every non-test source file of the package; the checker
// itself is tested on snippets below.
func TestEveryHandleUseIsKeptAlive(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	uses := 0
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			n, problems := checkKeepAlive(fset, f)
			uses += n
			for _, p := range problems {
				t.Error(p)
			}
		}
	}
	// The package passes handles to C in a few dozen places; finding none means the
	// checker no longer recognises them.
	if uses < 30 {
		t.Errorf("the checker found only %d handle uses in the package", uses)
	}
}

func TestKeepAliveCheckerRejectsEarlyKeepAlive(t *testing.T) {
	cases := []struct {
		name, src string
		problems  int
	}{
		{"the old RunList: KeepAlive between two uses", `
func (p *Pipeline) RunList(list *ItemList) (Result, error) {
	status := C.run(p.ptr(), list.ptr())
	runtime.KeepAlive(p)
	runtime.KeepAlive(list)
	return readResult(status, p.ptr())
}`, 5}, // three uncovered uses, two misplaced KeepAlives
		{"defer registered after the use", `
func (p *Pipeline) PolicyJSON() error {
	status := C.policy(p.ptr())
	defer runtime.KeepAlive(p)
	return check(status)
}`, 1},
		{"KeepAlive of another variable", `
func (s *Slicer) Slice(budget *Budget) error {
	defer runtime.KeepAlive(s)
	return check(C.slice(s.ptr(), budget.ptr()))
}`, 1},
		{"defer inside a branch", `
func (p *Pipeline) Len(x bool) error {
	if x {
		defer runtime.KeepAlive(p)
	}
	return check(C.len(p.ptr()))
}`, 2},
		{"a receiver that is not a variable", `
func f() error {
	return check(C.len(newList().ptr()))
}`, 1},
		{"deferred KeepAlive and Close, range variables, closures", `
func g(children []Child, budget *Budget) error {
	defer runtime.KeepAlive(children)
	defer runtime.KeepAlive(budget)
	list := newList()
	defer list.Close()
	for i, c := range children {
		cs[i] = c.Scorer.ptr()
	}
	return construct(func() status { return C.make(list.ptr(), budget.ptr(), children[0].Scorer.ptr()) })
}`, 0},
	}
	for _, c := range cases {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "snippet.go", "package p\n"+c.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, problems := checkKeepAlive(fset, f)
		if len(problems) != c.problems {
			t.Errorf("%s: %d problems, want %d: %q", c.name, len(problems), c.problems, problems)
		}
	}
}

// checkKeepAlive returns the number of x.ptr() calls in f's functions and the rule
// violations it finds.
func checkKeepAlive(fset *token.FileSet, f *ast.File) (uses int, problems []string) {
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil || fn.Name.Name == "ptr" {
			continue // the ptr accessors themselves only read the handle
		}
		n, p := checkFunc(fset, fn)
		uses += n
		problems = append(problems, p...)
	}
	return uses, problems
}

func checkFunc(fset *token.FileSet, fn *ast.FuncDecl) (uses int, problems []string) {
	report := func(pos token.Pos, format string, args ...interface{}) {
		problems = append(problems, fmt.Sprintf("%s: %s: %s", fset.Position(pos), fn.Name.Name, fmt.Sprintf(format, args...)))
	}
	// A range value variable stands for the ranged variable (for _, c := range children:
	// c.Scorer is kept alive by keeping children).
	rangeOf := map[string]string{}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok {
			if v, ok := r.Value.(*ast.Ident); ok {
				if root := rootIdent(r.X); root != "" {
					rangeOf[v.Name] = root
				}
			}
		}
		return true
	})
	// kept[x] is the index of the top-level statement that defers keeping x alive.
	kept := map[string]int{}
	for i, stmt := range fn.Body.List {
		if d, ok := stmt.(*ast.DeferStmt); ok {
			if x := keptVariable(d.Call); x != "" {
				if _, seen := kept[x]; !seen {
					kept[x] = i
				}
			}
		}
	}
	for i, stmt := range fn.Body.List {
		deferred, _ := stmt.(*ast.DeferStmt)
		ast.Inspect(stmt, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if isKeepAlive(call) && (deferred == nil || deferred.Call != call) {
				report(call.Pos(), "runtime.KeepAlive must be a deferred top-level statement before the first use")
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "ptr" || len(call.Args) != 0 {
				return true
			}
			uses++
			root := rootIdent(sel.X)
			if r, ok := rangeOf[root]; ok {
				root = r
			}
			if root == "" {
				report(call.Pos(), "the receiver of ptr() must be a variable the function keeps alive")
			} else if at, ok := kept[root]; !ok || at > i {
				report(call.Pos(), "%s.ptr() is not covered by a `defer runtime.KeepAlive(%s)` registered before it",
					types.ExprString(sel.X), root)
			}
			return true
		})
	}
	return uses, problems
}

// keptVariable is x for the deferred calls runtime.KeepAlive(x) and x.Close().
func keptVariable(call *ast.CallExpr) string {
	if isKeepAlive(call) && len(call.Args) == 1 {
		if id, ok := call.Args[0].(*ast.Ident); ok {
			return id.Name
		}
	}
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Close" && len(call.Args) == 0 {
		if id, ok := sel.X.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}

func isKeepAlive(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "KeepAlive" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "runtime"
}

// rootIdent is the variable an expression selects or indexes into (variants for
// variants[i].Pipeline), or "" when it is not rooted in a variable.
func rootIdent(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return x.Name
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		default:
			return ""
		}
	}
}
