package kubeapplier

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// The docs' code blocks, and which of them run (docs/development.md states the convention for
// those who write docs):
//
//   - A fenced block whose info string is sh, bash, console, go or python is runnable, unless
//     its first line is a comment "# excerpt: why" or "// excerpt: why": the reader sees that
//     it is only an excerpt, and why it does not run as it is. "excerpt: from PATH …" names the
//     file it is cut from (repo-relative): its lines must appear there in that order, with
//     nothing skipped between two of them but blank lines, comments and Go's error returns
//     unless a line "…" (or "// …", "# …") marks the gap.
//   - A block after <!-- walkthrough --> or <!-- walkthrough-setup --> is the README's
//     walkthrough: cmd/desirectl's TestREADMEWalkthrough runs it (and checks each line's
//     output), so it is not run again here.
//   - Every other block (no info string, json, yaml, …) is an output or a data sample; a json
//     block must parse as JSON.
var runnableLangs = map[string]bool{"sh": true, "bash": true, "console": true, "go": true, "python": true}

var walkthroughMarkers = []string{"<!-- walkthrough -->", "<!-- walkthrough-setup -->"}

// docBlock is one fenced code block of a Markdown page.
type docBlock struct {
	file   string // as given to parseDocBlocks, e.g. "docs/backend.md"
	line   int    // of the opening fence, 1-based
	lang   string // the info string's first word, "" for none
	body   string // without the fences and without the fence's own indentation
	before string // the non-blank line before the fence, trimmed
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d (```%s)", b.file, b.line, b.lang) }

var excerptLine = regexp.MustCompile(`^\s*(#|//)\s*excerpt:\s*(.*)$`)

// excerpt returns the reason an excerpt gives after "excerpt:", and whether it is one.
func (b docBlock) excerpt() (string, bool) {
	first, _, _ := strings.Cut(strings.TrimLeft(b.body, "\n"), "\n")
	m := excerptLine.FindStringSubmatch(first)
	if m == nil {
		return "", false
	}
	return strings.TrimSpace(m[2]), true
}

// walkthrough reports whether TestREADMEWalkthrough runs the block.
func (b docBlock) walkthrough() bool {
	for _, m := range walkthroughMarkers {
		if b.before == m {
			return true
		}
	}
	return false
}

// runnable reports whether the block must run as printed.
func (b docBlock) runnable() bool {
	_, ex := b.excerpt()
	return runnableLangs[b.lang] && !ex && !b.walkthrough()
}

var fence = regexp.MustCompile("^(\\s*)(```+)\\s*([^`\\s]*)")

// parseDocBlocks returns the fenced blocks of a Markdown text, indented ones (in a list)
// included. A fence that does not close is an error: the rest of the page would be code.
func parseDocBlocks(file, text string) ([]docBlock, error) {
	lines := strings.Split(text, "\n")
	var blocks []docBlock
	before := ""
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.TrimSpace(lines[i]) != "" {
				before = strings.TrimSpace(lines[i])
			}
			continue
		}
		indent, ticks := m[1], m[2]
		b := docBlock{file: file, line: i + 1, lang: m[3], before: before}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == ticks {
				closed = true
				break
			}
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: the fence does not close", file, b.line)
		}
		b.body = strings.Join(body, "\n")
		blocks = append(blocks, b)
		before = ""
	}
	return blocks, nil
}

var excerptSource = regexp.MustCompile(`^from (\S+)`)

// isElision reports whether a trimmed line marks lines left out: "…" or "...", alone or as
// a comment.
func isElision(l string) bool {
	l = strings.TrimSpace(strings.TrimLeft(l, "#/ "))
	return l == "…" || l == "..."
}

// skippable reports whether an excerpt may leave out a trimmed source line without an
// elision mark: it changes nothing a reader copies.
func skippable(l string) bool {
	switch {
	case l == "", strings.HasPrefix(l, "//"), strings.HasPrefix(l, "#"), l == "if err != nil {", l == "return err", l == "}":
		return true
	}
	return false
}

// checkExcerptSource checks that an excerpt "from PATH" is cut from that file as it is now:
// its lines in order, a gap only where skippable lines or an elision mark are. Excerpts
// without a source are not checked.
func checkExcerptSource(repo string, b docBlock) error {
	reason, ok := b.excerpt()
	m := excerptSource.FindStringSubmatch(reason)
	if !ok || m == nil {
		return nil
	}
	path := strings.TrimRight(m[1], ",;:.")
	data, err := os.ReadFile(filepath.Join(repo, path))
	if err != nil {
		return fmt.Errorf("the excerpt's source: %w", err)
	}
	src := strings.Split(string(data), "\n")
	for i := range src {
		src[i] = strings.TrimSpace(src[i])
	}
	lines := strings.Split(strings.TrimLeft(b.body, "\n"), "\n")[1:] // the excerpt line is the block's own
	pos, elided := -1, false
	for n, l := range lines {
		l = strings.TrimSpace(l)
		switch {
		case l == "":
			continue
		case isElision(l):
			elided = true
			continue
		}
		j := pos + 1
		for j < len(src) && src[j] != l {
			j++
		}
		if j == len(src) {
			return fmt.Errorf("block line %d %q is not in %s (after its line %d)", b.line+2+n, l, path, pos+1)
		}
		if pos >= 0 && !elided {
			for k := pos + 1; k < j; k++ {
				if !skippable(src[k]) {
					return fmt.Errorf("block line %d: the excerpt leaves out %s:%d %q without a \"…\" line", b.line+2+n, path, k+1, src[k])
				}
			}
		}
		pos, elided = j, false
	}
	return nil
}

// checkDocBlockStatic is what every block must satisfy without running it: an excerpt says
// why, and matches its source; a runnable Go block is a complete program; json parses.
func checkDocBlockStatic(repo string, b docBlock) error {
	if reason, ok := b.excerpt(); ok {
		if reason == "" {
			return errors.New("an excerpt must say why it does not run as it is (\"excerpt: needs a deployed applier\")")
		}
		return checkExcerptSource(repo, b)
	}
	switch {
	case b.lang == "json":
		if !json.Valid([]byte(b.body)) {
			return errors.New("not valid JSON")
		}
	case b.lang == "go" && !b.walkthrough() && !regexp.MustCompile(`(?m)^package main$`).MatchString(b.body):
		return errors.New("a Go fragment: make it a complete program (package main) or mark it \"// excerpt: why\"")
	}
	return nil
}

func TestDocBlocksConvention(t *testing.T) {
	repo := t.TempDir()
	src := "def desire_id(a):\n    return a\n\n\ndef create(kind):\n    t = now()\n    return t\n"
	if err := os.WriteFile(filepath.Join(repo, "b.py"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		md       string
		runnable []bool
		static   string // an error of the first block contains it; "" for none
	}{
		{name: "sh runs", md: "x\n```sh\necho hi\n```\n", runnable: []bool{true}},
		{name: "an excerpt says so on its first line", md: "```sh\n# excerpt: needs a deployed applier\nkubectl logs x\n```\n", runnable: []bool{false}},
		{name: "an excerpt without a reason", md: "```sh\n# excerpt:\nkubectl logs x\n```\n", runnable: []bool{false}, static: "must say why"},
		{name: "the walkthrough's blocks run elsewhere", md: "<!-- walkthrough -->\n```sh\nmake up\n```\n\n<!-- walkthrough-setup -->\n\n```sh\nls\n```\n", runnable: []bool{false, false}},
		{name: "an indented block in a list", md: "1. step:\n   ```sh\n   echo hi\n   ```\n   ```console\n   # excerpt: output\n   ```\n", runnable: []bool{true, false}},
		{name: "output and data do not run", md: "```\n$ x\n```\n```json\n{\"a\": 1}\n```\n", runnable: []bool{false, false}},
		{name: "invalid json", md: "```json\n{\"a\": 1,}\n```\n", runnable: []bool{false}, static: "not valid JSON"},
		{name: "a Go fragment must be marked", md: "```go\nx := 1\n```\n", runnable: []bool{true}, static: "a Go fragment"},
		{name: "a Go program runs", md: "```go\npackage main\n\nfunc main() {}\n```\n", runnable: []bool{true}},
		{name: "an excerpt that matches its source", md: "```python\n# excerpt: from b.py, the helpers\ndef desire_id(a):\n    return a\ndef create(kind):\n    t = now()\n```\n", runnable: []bool{false}},
		{name: "an excerpt that lost a line of its source", md: "```python\n# excerpt: from b.py, the helpers\ndef desire_id(a):\n    return a\n    t = now()\n```\n", runnable: []bool{false}, static: `leaves out b.py:5 "def create(kind):"`},
		{name: "an elision mark allows a gap", md: "```python\n# excerpt: from b.py, the helpers\ndef desire_id(a):\n# …\n    t = now()\n```\n", runnable: []bool{false}},
		{name: "an excerpt with a line its source lacks", md: "```python\n# excerpt: from b.py\ndef other():\n```\n", runnable: []bool{false}, static: "is not in b.py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := parseDocBlocks("p.md", tc.md)
			if err != nil {
				t.Fatal(err)
			}
			if len(blocks) != len(tc.runnable) {
				t.Fatalf("%d blocks, want %d: %+v", len(blocks), len(tc.runnable), blocks)
			}
			for i, b := range blocks {
				if b.runnable() != tc.runnable[i] {
					t.Errorf("block %d (%s): runnable %v, want %v", i, b, b.runnable(), tc.runnable[i])
				}
			}
			err = checkDocBlockStatic(repo, blocks[0])
			if (tc.static == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.static)) {
				t.Fatalf("static check: %v, want an error containing %q", err, tc.static)
			}
		})
	}
	if _, err := parseDocBlocks("p.md", "```sh\necho\n"); err == nil {
		t.Fatal("an unclosed fence parsed")
	}
}

// docPages returns README.md and docs/*.md with their blocks.
func docPages(t *testing.T) map[string][]docBlock {
	t.Helper()
	files, _ := filepath.Glob("docs/*.md")
	files = append([]string{"README.md"}, files...)
	pages := map[string][]docBlock{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := parseDocBlocks(f, string(data))
		if err != nil {
			t.Fatal(err)
		}
		pages[f] = blocks
	}
	return pages
}

// TestDocBlocks holds every block of the docs to the convention above without running any
// (excerpts match their sources, json parses, no unmarked Go fragment); the runnable ones run
// in TestIntegrationDocBlocks.
func TestDocBlocks(t *testing.T) {
	total := 0
	pages := docPages(t)
	for _, f := range slices.Sorted(maps.Keys(pages)) {
		blocks := pages[f]
		var run, excerpts, walk, other int
		for _, b := range blocks {
			if err := checkDocBlockStatic(".", b); err != nil {
				t.Errorf("%s: %v", b, err)
			}
			_, ex := b.excerpt()
			switch {
			case b.walkthrough():
				walk++
			case b.runnable():
				run++
			case ex:
				excerpts++
			default:
				other++
			}
		}
		total += len(blocks)
		t.Logf("%s: %d runnable, %d excerpts, %d run by TestREADMEWalkthrough, %d outputs or data", f, run, excerpts, walk, other)
	}
	if total < 15 {
		t.Fatalf("%d blocks found in the docs, want theirs (>= 15)", total)
	}
}

// blockTimeout bounds one block's run: the docs' runnable blocks are quick by rule (a long
// command, such as `make bench`, is an excerpt that says so).
const blockTimeout = 2 * time.Minute

// TestIntegrationDocBlocks runs every runnable block of README.md and docs/*.md as printed,
// against the local stack, and reports each failing one by file and line. A page's blocks run
// in order, each in a process of its own, sharing the page's directory (the working
// directory), desirectl's config and one DynamoDB Local database of their own (a fresh access
// key), whose tables are deleted at the end: sh/bash with `bash -euo pipefail`, console blocks
// as their "$ " lines, python with python3, Go programs built in a module of their own whose
// replace lines point at this checkout. The environment is the stack's (`make -s env`), with
// freshly built kube-applier-aws and desirectl first on PATH.
func TestIntegrationDocBlocks(t *testing.T) {
	if os.Getenv(testenv.EnvDynamoDBEndpoint) == "" || os.Getenv(testenv.EnvKubeconfig) == "" {
		msg := "integration test: the local stack is not running; run `make test`"
		if testenv.Required() {
			t.Fatal(msg + " (CI or KAA_INTEGRATION=1 forbids skipping)")
		}
		t.Skip(msg)
	}
	repo, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/kube-applier-aws", "./cmd/desirectl")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ran := 0
	pages := docPages(t)
	for _, f := range slices.Sorted(maps.Keys(pages)) {
		blocks := pages[f]
		var runnable []docBlock
		for _, b := range blocks {
			if b.runnable() {
				runnable = append(runnable, b)
			}
		}
		if len(runnable) == 0 {
			continue
		}
		t.Run(f, func(t *testing.T) {
			dir := t.TempDir()
			key := fmt.Sprintf("docs%d", rand.Int64())
			env := append(os.Environ(),
				"PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"),
				"AWS_ACCESS_KEY_ID="+key, // DynamoDB Local keeps one database per access key
				"DESIRECTL_CONFIG="+filepath.Join(dir, "desirectl.yaml"),
				"KUBECONFIG="+os.Getenv(testenv.EnvKubeconfig),
				"TMPDIR="+dir)
			t.Cleanup(func() { deleteDocTables(t, key) })
			for _, b := range runnable {
				out, err := runDocBlock(t, repo, dir, env, b)
				if err != nil {
					t.Errorf("%s does not run as printed: %v\n%s", b, err, out)
					continue
				}
				t.Logf("%s ran:\n%s", b, out)
			}
		})
		ran += len(runnable)
	}
	t.Logf("%d blocks run", ran)
}

// runDocBlock runs one block in dir with env and returns its combined output.
func runDocBlock(t *testing.T, repo, dir string, env []string, b docBlock) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), blockTimeout)
	defer cancel()
	script := filepath.Join(dir, fmt.Sprintf("block-%d", b.line))
	var cmd *exec.Cmd
	switch b.lang {
	case "sh", "bash", "console":
		body := b.body
		if b.lang == "console" {
			var cmds []string
			for _, l := range strings.Split(body, "\n") {
				if c, ok := strings.CutPrefix(l, "$ "); ok {
					cmds = append(cmds, c)
				}
			}
			body = strings.Join(cmds, "\n")
		}
		if err := os.WriteFile(script+".sh", []byte(body+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd = exec.CommandContext(ctx, "bash", "-euo", "pipefail", script+".sh")
	case "python":
		if err := os.WriteFile(script+".py", []byte(b.body+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd = exec.CommandContext(ctx, "python3", script+".py")
	case "go":
		return buildDocProgram(ctx, t, repo, script, env, b)
	default:
		return nil, fmt.Errorf("no runner for %q", b.lang)
	}
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	return cmd.CombinedOutput()
}

// buildDocProgram builds a Go block (package main) in a module of its own that requires both
// modules of this checkout through replace lines, as docs/library.md tells an embedder to do
// before a release. It is built, not run: a program of the docs may run until stopped.
func buildDocProgram(ctx context.Context, t *testing.T, repo, dir string, env []string, b docBlock) ([]byte, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	gomod := fmt.Sprintf(`module example.com/docblock

go 1.26

require (
	github.com/kube-applier-aws/kubeapplier v0.0.0
	github.com/kube-applier-aws/kubeapplier/api v0.0.0
)

replace (
	github.com/kube-applier-aws/kubeapplier => %s
	github.com/kube-applier-aws/kubeapplier/api => %s
)
`, repo, filepath.Join(repo, "api"))
	for name, data := range map[string]string{"go.mod": gomod, "main.go": b.body + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	for _, args := range [][]string{{"mod", "tidy"}, {"build", "-o", os.DevNull, "."}} {
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, &out, &out
		if err := cmd.Run(); err != nil {
			return out.Bytes(), fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
		}
	}
	return out.Bytes(), nil
}

// deleteDocTables deletes every table of the database the page's blocks used.
func deleteDocTables(t *testing.T, key string) {
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(cmp.Or(os.Getenv("AWS_REGION"), "us-east-1")),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(key, "local", "")))
	if err != nil {
		t.Logf("cleanup: %v", err)
		return
	}
	client := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(os.Getenv(testenv.EnvDynamoDBEndpoint))
	})
	testenv.DeleteTablesWithPrefix(t, client, "")
}

// TestDocsLinks: every relative link of README.md and docs/*.md names a file that exists and,
// with #anchor, a heading of that file (GitHub's anchor rule: lower case, punctuation but '-'
// and '_' dropped, spaces to '-'), so moving a section cannot leave a dead link.
func TestDocsLinks(t *testing.T) {
	files, _ := filepath.Glob("docs/*.md")
	files = append(files, "README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		b, _ := os.ReadFile(path)
		inCode := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "```") {
				inCode = !inCode
			}
			if !inCode && strings.HasPrefix(l, "#") {
				h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
				h = regexp.MustCompile(`[^\p{L}\p{N}\- _]`).ReplaceAllString(h, "")
				a[strings.ReplaceAll(h, " ", "-")] = true
			}
		}
		anchors[path] = a
		return a
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s: link %q: %v", f, target, err)
				continue
			}
			if anchor != "" && !anchorsOf(path)[anchor] {
				t.Errorf("%s: link %q: no heading with that anchor in %s", f, target, path)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("%d links checked, want the docs' links (>= 20)", checked)
	}
}
