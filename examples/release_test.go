package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

// The two modules of this repository. A release tags the root module vX.Y.Z and the nested
// api module api/vX.Y.Z (Go's rule for a module in a subdirectory), and the root's go.mod
// requires the api version released with it: docs/library.md, "Versions".
const (
	rootModule = "github.com/kube-applier-aws/kubeapplier"
	apiModule  = rootModule + "/api"
)

// minControllerRuntime is the oldest controller-runtime that compiles against the client-go
// the library requires (v0.18.4, which sigs.k8s.io/cli-utils requires, lacks
// HasSyncedChecker). The library's go.mod must lift embedders to at least this one.
const minControllerRuntime = "v0.25.2"

// TestReleaseResolvesFromAModuleProxy is the release scheme without a network: it serves the
// root module and the api module, at the versions the go.mod files of this checkout name for
// them, from a file-based module proxy built from the checkout (no replace directive), and
// builds the examples as modules outside the repository would: examples/backend-go and
// examples/controller-runtime as shipped minus their replace lines, and (the documented lines
// of docs/library.md and docs/backend.md) a new module per example that runs `go get` of the
// library or the api module, then `go mod tidy && go build`. Every other module comes from
// the machine's module cache or proxy; no checksum database is asked (GOSUMDB=off).
func TestReleaseResolvesFromAModuleProxy(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the proxy's module zips list the checkout's files with git: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	rootMod := readModFile(t, filepath.Join(root, "go.mod"))
	apiVersion := requiredVersion(t, rootMod, apiModule)
	rootVersion := requiredVersion(t, readModFile(t, filepath.Join(root, "examples/controller-runtime/go.mod")), rootModule)
	for _, v := range []string{apiVersion, rootVersion} {
		// A v0.0.0 (or a pseudo-version) is what a local replace alone satisfies: no tag makes it.
		if !semver.IsValid(v) || semver.Prerelease(v) != "" || v == "v0.0.0" {
			t.Fatalf("required version %s is no release a tag can make (vX.Y.Z)", v)
		}
	}
	if got := requiredVersion(t, readModFile(t, filepath.Join(root, "examples/backend-go/go.mod")), apiModule); got != apiVersion {
		t.Errorf("examples/backend-go requires %s %s, the root module %s: one release", apiModule, got, apiVersion)
	}

	work := t.TempDir()
	proxy := filepath.Join(work, "proxy")
	serveModule(t, proxy, root, rootModule, rootVersion)
	serveModule(t, proxy, filepath.Join(root, "api"), apiModule, apiVersion)
	env := proxyEnv(t, proxy, filepath.Join(work, "modcache"))

	t.Run("backend-go as shipped", func(t *testing.T) {
		dir := copyExample(t, filepath.Join(root, "examples/backend-go"), filepath.Join(work, "backend-go"))
		goCmd(t, dir, env, "build", "-o", "backend", ".")
		assertNoKubernetes(t, dir, env)
	})
	t.Run("backend-go from go get", func(t *testing.T) {
		dir := newModule(t, filepath.Join(work, "backend-go-new"), filepath.Join(root, "examples/backend-go/main.go"))
		goCmd(t, dir, env, "get", apiModule)
		buildTidy(t, dir, env)
		assertNoKubernetes(t, dir, env)
	})
	t.Run("controller-runtime as shipped", func(t *testing.T) {
		dir := copyExample(t, filepath.Join(root, "examples/controller-runtime"), filepath.Join(work, "controller-runtime"))
		goCmd(t, dir, env, "build", "-o", "operator", ".")
	})
	t.Run("controller-runtime from go get", func(t *testing.T) {
		dir := newModule(t, filepath.Join(work, "controller-runtime-new"), filepath.Join(root, "examples/controller-runtime/main.go"))
		goCmd(t, dir, env, "get", rootModule)
		buildTidy(t, dir, env)
		v := selectedVersion(t, dir, env, "sigs.k8s.io/controller-runtime")
		if semver.Compare(v, minControllerRuntime) < 0 {
			t.Errorf("go mod tidy selected controller-runtime %s, want >= %s", v, minControllerRuntime)
		}
		t.Logf("controller-runtime %s", v)
	})
	t.Run("embed from go get", func(t *testing.T) {
		dir := newModule(t, filepath.Join(work, "embed-new"), filepath.Join(root, "examples/embed/main.go"))
		goCmd(t, dir, env, "get", rootModule)
		buildTidy(t, dir, env)
	})
}

// TestLibraryLiftsControllerRuntime checks the requirement that makes an embedder's `go mod
// tidy` pick a controller-runtime that builds (Go's minimal version selection takes the highest
// version any go.mod of the build requires, the library's included).
func TestLibraryLiftsControllerRuntime(t *testing.T) {
	mod := readModFile(t, filepath.Join("..", "go.mod"))
	if v := requiredVersion(t, mod, "sigs.k8s.io/controller-runtime"); semver.Compare(v, minControllerRuntime) < 0 {
		t.Errorf("go.mod requires controller-runtime %s, want >= %s", v, minControllerRuntime)
	}
}

func readModFile(t *testing.T, path string) *modfile.File {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// requiredVersion is the version mod's require directive names for path; the test fails
// without one.
func requiredVersion(t *testing.T, mod *modfile.File, path string) string {
	t.Helper()
	for _, r := range mod.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	t.Fatalf("%s requires no %s", mod.Module.Mod.Path, path)
	return ""
}

// serveModule writes module path at version, made of the files of dir that git tracks or
// would track (untracked files not ignored: the work tree as it is), into the file proxy at
// proxy in the GOPROXY protocol's layout: @v/list, .info, .mod and .zip. The zip leaves out
// nested modules (their go.mod marks them) as the go command does.
func serveModule(t *testing.T, proxy, dir, path, version string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v", dir, err)
	}
	var files []modzip.File
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" {
			continue
		}
		f := diskFile{dir: dir, path: filepath.ToSlash(name)}
		if _, err := f.Lstat(); errors.Is(err, fs.ErrNotExist) {
			continue // deleted in the work tree, not yet in the index
		}
		files = append(files, f)
	}
	escaped, err := module.EscapePath(path)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	var zip bytes.Buffer
	if err := modzip.Create(&zip, module.Version{Path: path, Version: version}, files); err != nil {
		t.Fatalf("zip of %s@%s: %v", path, version, err)
	}
	goMod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"list": []byte(version + "\n"), version + ".info": info, version + ".mod": goMod, version + ".zip": zip.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// diskFile is a file of the checkout as golang.org/x/mod/zip reads it.
type diskFile struct{ dir, path string }

func (f diskFile) Path() string                 { return f.path }
func (f diskFile) Lstat() (os.FileInfo, error)  { return os.Lstat(filepath.Join(f.dir, f.path)) }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.dir, f.path)) }

// proxyEnv is the environment of the go commands run as an outside module: this repository's
// modules from the file proxy first, then the machine's module cache (read as a proxy, so
// nothing is fetched twice) and its own GOPROXY. The module cache is modcache, not the
// machine's: a module version in it can never change, and the checkout changes between runs.
func proxyEnv(t *testing.T, proxy, modcache string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", "env", "GOPROXY", "GOMODCACHE").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("go env GOPROXY GOMODCACHE: %q", out)
	}
	goproxy := "file://" + filepath.ToSlash(proxy)
	if cache := filepath.Join(lines[1], "cache", "download"); lines[1] != "" {
		goproxy += ",file://" + filepath.ToSlash(cache)
	}
	if lines[0] != "" && lines[0] != "off" {
		goproxy += "," + lines[0]
	}
	set := map[string]string{
		"GOPROXY":    goproxy,
		"GOMODCACHE": modcache,
		// -modcacherw: t.TempDir can remove the cache; -trimpath: the build cache's keys do not
		// name the (new) module cache's directory, so a run recompiles only what changed.
		"GOFLAGS": "-mod=mod -modcacherw -trimpath",
		// No checksum database: this repository's modules are not in one, and nothing else is
		// fetched over the network that the machine's cache and proxy did not already check.
		"GONOSUMDB": "github.com/kube-applier-aws", "GOSUMDB": "off",
		"GOPRIVATE": "", "GONOPROXY": "", "GOWORK": "off", "GOTOOLCHAIN": "local",
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		_, ok := set[k]
		return ok
	})
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// goCmd runs the go command in dir with env; the test fails with its output when it fails.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, lastLines(stderr.String(), 30))
	}
	return string(out)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// copyExample copies the files of the example module src into dst, its go.mod without the
// replace directives that point into this checkout.
func copyExample(t *testing.T, src, dst string) string {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "go.mod" {
			mod, err := modfile.Parse(e.Name(), data, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range slices.Clone(mod.Replace) {
				if err := mod.DropReplace(r.Old.Path, r.Old.Version); err != nil {
					t.Fatal(err)
				}
			}
			mod.Cleanup()
			if data, err = mod.Format(); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte("replace")) {
				t.Fatalf("%s: replace left in\n%s", src, data)
			}
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// newModule makes dir a new module with nothing but a go.mod and main, as an embedder starts.
func newModule(t *testing.T, dir, main string) string {
	t.Helper()
	data, err := os.ReadFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/operator\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// buildTidy runs `go mod tidy && go build` in dir and logs what it cost: the module graph
// (`go list -m all`) and the binary's size.
func buildTidy(t *testing.T, dir string, env []string) {
	t.Helper()
	goCmd(t, dir, env, "mod", "tidy")
	goCmd(t, dir, env, "build", "-o", "bin", ".")
	st, err := os.Stat(filepath.Join(dir, "bin"))
	if err != nil {
		t.Fatal(err)
	}
	mods := strings.Count(goCmd(t, dir, env, "list", "-m", "all"), "\n")
	t.Logf("go list -m all: %d modules; binary %d bytes (%.1f MB)", mods, st.Size(), float64(st.Size())/1e6)
}

func selectedVersion(t *testing.T, dir string, env []string, path string) string {
	t.Helper()
	return strings.TrimSpace(goCmd(t, dir, env, "list", "-m", "-f", "{{.Version}}", path))
}

// assertNoKubernetes fails when the backend's build links a k8s.io package: the api module
// is the contract without client-go.
func assertNoKubernetes(t *testing.T, dir string, env []string) {
	t.Helper()
	for _, p := range strings.Fields(goCmd(t, dir, env, "list", "-deps", ".")) {
		if strings.HasPrefix(p, "k8s.io/") {
			t.Fatalf("the backend links %s", p)
		}
	}
}
