// Command applypath measures the way of one ApplyDesire through the applier's code: the files
// it passes from its stream record to its status write, in order, and how often it returns to
// a file or a package already visited (issue 24).
//
// It copies the module at a git revision into a temporary directory, adds a recorder call at
// the top of every function and function literal of the library (the root package, internal/
// and api/), runs one ApplyDesire of a ConfigMap through an applier on the local stack
// (driver_test.go.txt: New with RESTConfig, as an embedder runs it), and reads back which
// functions ran on which goroutine. The way is three segments, in order:
//
//   - the stream: the watcher's poll round that emitted the record, on its goroutine;
//   - the informer: client-go's goroutines between the emit and the worker (the store's key
//     and index functions, the event handler that queues the desire);
//   - the worker: from the queue's hand-out to the end of the reconcile and its status write.
//
// Idle pollers of the other tables, the heartbeat and the test's own goroutine are left out.
//
// Usage (the stack running, its environment loaded: make up; eval "$(make -s env)"):
//
//	go run ./hack/applypath [-rev HEAD] [-v]
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/tools/go/ast/astutil"
)

//go:embed recorder.go.txt
var recorder []byte

//go:embed driver_test.go.txt
var driver []byte

const recorderImport = "github.com/kube-applier-aws/kubeapplier/api/pathtrace"

func main() {
	rev := flag.String("rev", "HEAD", "the git revision to measure")
	verbose := flag.Bool("v", false, "print every step of the way")
	keep := flag.Bool("keep", false, "keep the instrumented copy")
	flag.Parse()
	log.SetFlags(0)

	dir, err := os.MkdirTemp("", "applypath-")
	if err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	if err := extract(*rev, dir); err != nil {
		log.Fatal(err)
	}
	if err := instrument(dir); err != nil {
		log.Fatal(err)
	}
	out := filepath.Join(dir, "events.tsv")
	cmd := exec.Command("go", "test", "-tags", "pathtrace", "-run", "^TestApplyPath$", "-count=1", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KAA_INTEGRATION=1", "PATHTRACE_OUT="+out)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		log.Fatalf("the driver test failed (is the stack up and its environment loaded?): %v", err)
	}
	events, err := readEvents(out)
	if err != nil {
		log.Fatal(err)
	}
	way, err := wayOf(events)
	if err != nil {
		log.Fatal(err)
	}
	report(*rev, way, *verbose)
}

// extract writes the tree of rev into dir.
func extract(rev, dir string) error {
	archive := exec.Command("git", "archive", rev)
	untar := exec.Command("tar", "-x", "-C", dir)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return err
	}
	untar.Stdin = pipe
	archive.Stderr, untar.Stderr = os.Stderr, os.Stderr
	if err := untar.Start(); err != nil {
		return err
	}
	if err := archive.Run(); err != nil {
		return fmt.Errorf("git archive %s: %w", rev, err)
	}
	return untar.Wait()
}

// instrument adds the recorder to api/ and a call to it at the top of every function of the
// library's production files, and the driver test to the root package.
func instrument(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "api", "pathtrace"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "api", "pathtrace", "pathtrace.go"), recorder, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "zz_applypath_test.go"), driver, 0o644); err != nil {
		return err
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			switch rel {
			case "cmd", "examples", "hack", filepath.Join("api", "pathtrace"), ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		return instrumentFile(p)
	})
}

func instrumentFile(p string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
	if err != nil {
		return err
	}
	if f.Name.Name == "main" {
		return nil
	}
	call := func() ast.Stmt {
		return &ast.ExprStmt{X: &ast.CallExpr{Fun: &ast.SelectorExpr{X: ast.NewIdent("pathtrace"), Sel: ast.NewIdent("Enter")}}}
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		switch fn := node.(type) {
		case *ast.FuncDecl:
			if fn.Body != nil {
				fn.Body.List = append([]ast.Stmt{call()}, fn.Body.List...)
				n++
			}
		case *ast.FuncLit:
			fn.Body.List = append([]ast.Stmt{call()}, fn.Body.List...)
			n++
		}
		return true
	})
	if n == 0 {
		return nil
	}
	astutil.AddImport(fset, f, recorderImport)
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return err
	}
	return os.WriteFile(p, buf.Bytes(), 0o644)
}

// event is one function entered: on goroutine g, in file (relative to the module), func fn,
// called from caller's file ("-": from outside the module, as client-go or the runtime).
type event struct {
	g      uint64
	file   string
	fn     string
	caller string
}

func readEvents(p string) ([]event, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "\t", 4)
		if len(parts) != 4 {
			continue
		}
		g, err := strconv.ParseUint(parts[0], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, event{g: g, file: parts[1], fn: parts[2], caller: parts[3]})
	}
	return out, sc.Err()
}

func has(e event, suffix string) bool { return strings.HasSuffix(e.fn, suffix) }

// wayOf picks the three segments of the ApplyDesire's way out of every event recorded.
func wayOf(ev []event) ([]event, error) {
	emit := slices.IndexFunc(ev, func(e event) bool { return has(e, ".emit") && strings.Contains(e.fn, "streamWatcher") })
	rec := slices.IndexFunc(ev, func(e event) bool {
		// The default ApplyDesire reconciler: the root's applyReconciler until internal/reconcile's Apply.
		return strings.Contains(e.fn, "applyReconciler).Reconcile") || strings.Contains(e.fn, "/internal/reconcile.(*Apply).Reconcile")
	})
	if emit < 0 || rec < 0 {
		return nil, fmt.Errorf("no emit (%d) or no ApplyDesire reconcile (%d) recorded", emit, rec)
	}
	gs, gw := ev[emit].g, ev[rec].g
	// The stream: the poll round that emitted the record.
	start := emit
	for i := emit; i >= 0; i-- {
		if ev[i].g == gs && has(ev[i], ".pollOnce") {
			start = i
			break
		}
	}
	var way []event
	for i := start; i < len(ev); i++ {
		if ev[i].g != gs {
			continue
		}
		if i > emit && has(ev[i], ".pollOnce") {
			break
		}
		way = append(way, ev[i])
	}
	// The worker: from its hand-out to the next one.
	wstart := rec
	for i := rec; i >= 0; i-- {
		if ev[i].g == gw && has(ev[i], ".processNext") {
			wstart = i
			break
		}
	}
	// The informer: other goroutines between the emit and the worker's hand-out, but for the
	// pollers, the heartbeat and the target watches.
	noise := map[uint64]bool{gs: true, gw: true}
	for _, e := range ev {
		if has(e, ".pollOnce") || has(e, ".poll") || strings.Contains(e.file, "heartbeat") || strings.Contains(e.fn, "Writer).beat") ||
			strings.Contains(e.file, "watches.go") || strings.Contains(e.file, "sighting.go") ||
			strings.Contains(e.file, "stamp.go") { // its name before 2026-12-04, for -rev
			noise[e.g] = true
		}
	}
	for i := emit + 1; i < wstart; i++ {
		if !noise[ev[i].g] {
			way = append(way, ev[i])
		}
	}
	for i := wstart; i < len(ev); i++ {
		if ev[i].g != gw {
			continue
		}
		if i > rec && has(ev[i], ".processNext") {
			break
		}
		way = append(way, ev[i])
	}
	return way, nil
}

// pkgOf is a file's package: "." for the root, else its directory.
func pkgOf(file string) string {
	if d := path.Dir(file); d != "." {
		return d
	}
	return "."
}

// runs collapses consecutive equal keys: the sequence of moves.
func runs(way []event, key func(event) string) []string {
	var out []string
	for _, e := range way {
		k := key(e)
		if len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// returns counts the steps into a key already left before.
func returns(seq []string) int {
	seen, n := map[string]bool{}, 0
	for _, k := range seq {
		if seen[k] {
			n++
		}
		seen[k] = true
	}
	return n
}

func report(rev string, way []event, verbose bool) {
	files := runs(way, func(e event) string { return e.file })
	pkgs := runs(way, func(e event) string { return pkgOf(e.file) })
	distinct := func(seq []string) int {
		m := map[string]bool{}
		for _, s := range seq {
			m[s] = true
		}
		return len(m)
	}
	fmt.Printf("ApplyDesire way at %s: %d function entries\n", rev, len(way))
	fmt.Printf("files:    %d distinct, %d moves, %d returns to a file already left\n", distinct(files), len(files)-1, returns(files))
	fmt.Printf("packages: %d distinct, %d moves, %d returns to a package already left\n", distinct(pkgs), len(pkgs)-1, returns(pkgs))
	fmt.Printf("packages in order: %s\n", strings.Join(pkgs, " → "))
	fmt.Printf("files in order:    %s\n", strings.Join(files, " → "))
	// Calls between packages: down (the root into internal/ or api/, internal/ into api/ or
	// another internal package), or up (a callback: internal/ or api/ calling back into the
	// root, api/ into internal/).
	type edge struct{ from, to string }
	calls := map[edge]int{}
	for _, e := range way {
		if e.caller == "-" || pkgOf(e.caller) == pkgOf(e.file) {
			continue
		}
		calls[edge{pkgOf(e.caller), pkgOf(e.file)}]++
	}
	rank := func(p string) int {
		switch {
		case p == ".":
			return 0
		case strings.HasPrefix(p, "internal/"):
			return 1
		}
		return 2
	}
	var edges []edge
	for e := range calls {
		edges = append(edges, e)
	}
	slices.SortFunc(edges, func(a, b edge) int { return strings.Compare(a.from+" "+a.to, b.from+" "+b.to) })
	up, total := 0, 0
	fmt.Println("calls between packages (caller → callee: calls):")
	for _, e := range edges {
		dir := "down"
		if rank(e.to) < rank(e.from) {
			dir, up = "UP (a callback)", up+calls[e]
		}
		total += calls[e]
		fmt.Printf("  %-22s → %-22s %3d  %s\n", e.from, e.to, calls[e], dir)
	}
	fmt.Printf("%d calls between packages, %d of them up\n", total, up)
	if verbose {
		for _, e := range way {
			fmt.Printf("  g%-5d %-36s %-60s from %s\n", e.g, e.file, e.fn, e.caller)
		}
	}
}
