// Command house prints the figures issue #39 judges the layout by: the root package's
// production and test files, test files without a twin, exported names per package, file
// names repeated across directories, and desirectl's binary size and modules.
//
//	go run ./hack/house            # from the repository root
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "house:", err)
		os.Exit(1)
	}
}

func run() error {
	dirs, err := packageDirs(".")
	if err != nil {
		return err
	}
	root := scanDir(".")
	fmt.Printf("root package: %d production files, %d lines; %d test files, %d lines; %d test files without a twin\n",
		len(root.prod), root.prodLines, len(root.tests), root.testLines, len(root.orphans()))
	fmt.Println("exported names per package (top-level identifiers + methods of exported types):")
	for _, d := range dirs {
		top, methods, err := exported(d)
		if err != nil {
			return err
		}
		if top+methods == 0 {
			continue
		}
		fmt.Printf("  %-24s %4d (%d top-level, %d methods)\n", d, top+methods, top, methods)
	}
	fmt.Printf("file names at two or more levels of the library: %s\n", strings.Join(repeated(dirs), ", "))
	return desirectl()
}

type dirFiles struct {
	prod, tests          []string
	prodLines, testLines int
}

// orphans are test files whose subject file does not exist, whole-applier scenarios
// (applier_<scenario>_test.go), integration and example tests excepted (they test the whole,
// not a file).
func (d dirFiles) orphans() []string {
	have := map[string]bool{}
	for _, p := range d.prod {
		have[p] = true
	}
	var out []string
	for _, t := range d.tests {
		if strings.HasPrefix(t, "integration_") || strings.HasPrefix(t, "example_") || strings.HasPrefix(t, "applier_") {
			continue
		}
		if !have[strings.TrimSuffix(t, "_test.go")+".go"] {
			out = append(out, t)
		}
	}
	return out
}

func scanDir(dir string) dirFiles {
	var d dirFiles
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") {
			continue
		}
		lines := countLines(filepath.Join(dir, n))
		if strings.HasSuffix(n, "_test.go") {
			d.tests = append(d.tests, n)
			d.testLines += lines
		} else {
			d.prod = append(d.prod, n)
			d.prodLines += lines
		}
	}
	return d
}

func countLines(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("\n"))
}

// packageDirs lists the library's packages: the root, api/ and internal/...
func packageDirs(root string) ([]string, error) {
	dirs := []string{"."}
	for _, top := range []string{"api", "internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(p string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return err
			}
			if m, _ := filepath.Glob(filepath.Join(p, "*.go")); len(m) > 0 {
				dirs = append(dirs, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return dirs, nil
}

func exported(dir string) (top, methods int, err error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return 0, 0, err
	}
	for name, p := range pkgs {
		if name == "main" {
			continue
		}
		for _, f := range p.Files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						top++
					} else if recvExported(d.Recv) {
						methods++
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								top++
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									top++
								}
							}
						}
					}
				}
			}
		}
	}
	return top, methods, nil
}

func recvExported(r *ast.FieldList) bool {
	t := r.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// repeated names the production file names found in more than one library directory (the
// root, api/, internal/...), except doc.go.
func repeated(dirs []string) []string {
	seen := map[string][]string{}
	for _, d := range dirs {
		if strings.HasPrefix(d, "cmd") {
			continue
		}
		for _, f := range scanDir(d).prod {
			if f != "doc.go" {
				seen[f] = append(seen[f], d)
			}
		}
	}
	var out []string
	for f, ds := range seen {
		if len(ds) > 1 {
			out = append(out, fmt.Sprintf("%s (%s)", f, strings.Join(ds, " ")))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// desirectl builds the CLI and prints its size, its modules, and whether it links the
// applier's machinery (Prometheus, leader election, kstatus).
func desirectl() error {
	tmp, err := os.MkdirTemp("", "house")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "desirectl")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/desirectl").CombinedOutput(); err != nil {
		return fmt.Errorf("build desirectl: %v: %s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		return err
	}
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		return err
	}
	mods := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 0 && f[0] == "dep" {
			mods++
		}
	}
	deps, err := exec.Command("go", "list", "-deps", "./cmd/desirectl").Output()
	if err != nil {
		return err
	}
	var heavy []string
	for _, p := range []string{"github.com/prometheus/client_golang", "k8s.io/client-go/tools/leaderelection", "sigs.k8s.io/cli-utils"} {
		if bytes.Contains(deps, []byte(p)) {
			heavy = append(heavy, p)
		}
	}
	if len(heavy) == 0 {
		heavy = []string{"none"}
	}
	fmt.Printf("desirectl: %.1f MB, %d modules; links %s\n", float64(st.Size())/1e6, mods, strings.Join(heavy, ", "))
	return nil
}
