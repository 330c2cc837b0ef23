package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-applier-aws/kubeapplier/internal/testenv"
)

// The README's walkthrough: the fenced block after setupMarker (start the stack, load its
// environment, install the binaries), then the one after walkthroughMarker (desirectl and the
// applier). TestREADMEWalkthrough runs them as written, but for the setup's make lines.
const (
	setupMarker       = "<!-- walkthrough-setup -->"
	walkthroughMarker = "<!-- walkthrough -->"
)

// blockCommands returns the commands of the fenced block after marker, one per command line:
// a line ending in a backslash is joined with the next, as bash reads it.
func blockCommands(readme, marker string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, marker)
	if !ok {
		return nil, fmt.Errorf("no %s in the README", marker)
	}
	rest = strings.TrimLeft(rest, " \n")
	if !strings.HasPrefix(rest, "```") {
		return nil, fmt.Errorf("%s is not followed by a fenced block", marker)
	}
	_, rest, _ = strings.Cut(rest, "\n")
	block, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		return nil, fmt.Errorf("the block after %s does not end", marker)
	}
	var cmds []string
	cur := ""
	for _, line := range strings.Split(block, "\n") {
		cur += line
		if strings.HasSuffix(line, "\\") {
			cur += "\n"
			continue
		}
		if strings.TrimSpace(cur) != "" {
			cmds = append(cmds, cur)
		}
		cur = ""
	}
	if cur != "" {
		return nil, fmt.Errorf("the block after %s ends in a backslash", marker)
	}
	return cmds, nil
}

// walkthroughCommands returns the setup's commands and the walkthrough's.
func walkthroughCommands(readme string) (setup, walk []string, err error) {
	if setup, err = blockCommands(readme, setupMarker); err != nil {
		return nil, nil, err
	}
	walk, err = blockCommands(readme, walkthroughMarker)
	return setup, walk, err
}

func readREADME(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The walkthrough holds what a newcomer needs, in order: the stack and its environment, the
// binaries on PATH, the tables, an applier for them, and desirectl's commands.
func TestWalkthroughInREADME(t *testing.T) {
	setup, walk, err := walkthroughCommands(readREADME(t))
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"make up", `eval "$(make -s env)"`, `make install && export PATH="$PWD/bin:$PATH"`,
		"desirectl config set-context", "desirectl tables create", "kube-applier-aws ", "desirectl apply ", "desirectl wait ",
		"kill %1", "desirectl tables delete --yes"}
	cmds := append(setup, walk...)
	next := 0
	for _, c := range cmds {
		if next < len(order) && strings.HasPrefix(c, order[next]) {
			next++
		}
	}
	if next < len(order) {
		t.Fatalf("the walkthrough lacks a command starting with %q (in this order: %q); commands:\n%s",
			order[next], order, strings.Join(cmds, "\n"))
	}
}

// lineCheck is what one walkthrough command must print, besides exit 0 and nothing on stderr.
type lineCheck struct {
	prefix string // the command starts with it
	check  func(cmd, stdout string) error
}

var (
	writtenLine = regexp.MustCompile(`(?m)^(apply|delete)desire/\S+ (created|configured|unchanged) \(`)
	metLine     = regexp.MustCompile(`(?m)^(apply|delete|read)desire/\S+ condition met$`)
)

var walkthroughChecks = []lineCheck{
	{"desirectl config set-context", func(_, out string) error {
		return wantContains(out, "Switched to context ")
	}},
	{"desirectl tables create", func(_, out string) error {
		return wantContains(out, "6 tables ready for management cluster ")
	}},
	{"desirectl apply ", func(cmd, out string) error {
		written, met := len(writtenLine.FindAllString(out, -1)), len(metLine.FindAllString(out, -1))
		if written == 0 || (strings.Contains(cmd, "--wait") && met != written) {
			return fmt.Errorf("%d desires written, %d condition met", written, met)
		}
		return nil
	}},
	{"desirectl get ", func(_, out string) error {
		if !strings.HasPrefix(out, "KIND ") {
			return errors.New("no table header")
		}
		return wantContains(out, "Desire ")
	}},
	{"desirectl read ", func(_, out string) error { return wantContains(out, "\nkind: ") }},
	{"desirectl delete ", func(cmd, out string) error {
		if strings.Contains(cmd, "--wait") && !metLine.MatchString(out) {
			return errors.New("no condition met")
		}
		return wantContains(out, "deletedesire/")
	}},
	// The walkthrough ends by removing what it wrote: the applier stopped cleanly (the wait
	// returns its exit code), then its six tables deleted, so that `make demo` starts clean.
	{"kill %1", func(_, out string) error {
		if out != "" {
			return errors.New("want no output")
		}
		return nil
	}},
	{"desirectl tables delete ", func(_, out string) error {
		return wantContains(out, "6 tables of management cluster mc01 deleted (0 did not exist)")
	}},
	{"desirectl wait ", func(_, out string) error {
		if !metLine.MatchString(out) || strings.Count(out, "\n") != 1 {
			return errors.New("want one 'condition met' line")
		}
		return nil
	}},
}

func wantContains(out, s string) error {
	if !strings.Contains(out, s) {
		return fmt.Errorf("no %q", s)
	}
	return nil
}

// TestREADMEWalkthrough runs the README's walkthrough as written, line by line in one bash
// (as pasted into a terminal) from the repo root, against the local stack: the setup's lines
// but for `make` (the stack runs; both binaries are built into a temporary bin directory first
// on PATH instead of bin/), so the environment is what `make -s env` exports, with a fresh
// DynamoDB Local database; then the walkthrough, which starts the applier itself, and ends by
// stopping it and deleting its tables (no job may be left running). Every command
// must exit 0, print nothing on stderr (no SDK noise, no guessed resource names) and print what
// its kind of command prints.
func TestREADMEWalkthrough(t *testing.T) {
	setup, walk, err := walkthroughCommands(readREADME(t))
	if err != nil {
		t.Fatal(err)
	}
	endpoint, kubeconfig := os.Getenv(testenv.EnvDynamoDBEndpoint), os.Getenv(testenv.EnvKubeconfig)
	if endpoint == "" || kubeconfig == "" {
		msg := "integration test: the local stack is not running; run `make test`"
		if testenv.Required() {
			t.Fatal(msg + " (CI or KAA_INTEGRATION=1 forbids skipping)")
		}
		t.Skip(msg)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/kube-applier-aws", "./cmd/desirectl")
	build.Dir = repo
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// A fresh terminal's environment with the binaries first on PATH; `make -s env` finds the
	// running stack through KAA_STACK_DIR (its kubeconfig lives there). Then a fresh access
	// key (DynamoDB Local keeps one database per key); desirectl's config and the applier's log
	// go to the test's directory.
	env := []string{
		"PATH=" + bin + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"KAA_STACK_DIR=" + filepath.Dir(kubeconfig), configEnv + "=" + filepath.Join(tmp, "desirectl.yaml"), "TMPDIR=" + tmp,
	}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "AWS_"), strings.HasPrefix(name, "KAA_"), strings.HasPrefix(name, "MAKE"),
			name == "MFLAGS", name == "PATH", name == "KUBECONFIG", name == configEnv, name == "TMPDIR":
		default:
			env = append(env, kv)
		}
	}
	var cmds []string
	for _, c := range setup {
		if !strings.HasPrefix(c, "make ") {
			cmds = append(cmds, c)
		}
	}
	cmds = append(cmds, fmt.Sprintf("export AWS_ACCESS_KEY_ID=walkthrough%d  # test only: a database of its own", rand.Int64()))
	cmds = append(cmds, walk...)

	// One bash runs the commands in turn, each with its output in files, and stops at the
	// first that fails. A command may leave a job in the background (the applier): at the end
	// bash lists its jobs in a file and waits for them, so they stay its children until this
	// test has stopped them by their ID.
	var script strings.Builder
	out := func(i int, what string) string { return filepath.Join(tmp, fmt.Sprintf("%d.%s", i, what)) }
	jobsFile := filepath.Join(tmp, "jobs")
	end := fmt.Sprintf("jobs -p >%q.new; mv %q.new %q; wait", jobsFile, jobsFile, jobsFile)
	for i, c := range cmds {
		fmt.Fprintf(&script, "{\n%s\n} >%q 2>%q; rc=$?; echo $rc >%q; if [ $rc -ne 0 ]; then %s; exit $rc; fi\n",
			c, out(i, "out"), out(i, "err"), out(i, "rc"), end)
	}
	script.WriteString(end + "\n")
	scriptPath := filepath.Join(tmp, "walkthrough.sh")
	if err := os.WriteFile(scriptPath, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	shellLog, err := os.Create(filepath.Join(tmp, "bash.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer shellLog.Close()
	bash := exec.Command("bash", scriptPath)
	bash.Dir, bash.Env, bash.Stdout, bash.Stderr = repo, env, shellLog, shellLog
	if err := bash.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bash.Wait() }()
	runErr := waitForJobs(t, bash.Process, done, jobsFile, 5*time.Minute)
	// The walkthrough stops its own applier: a job still running at its end is left to the
	// reader, and would act on the next walkthrough's or `make demo`'s desires.
	if left, err := os.ReadFile(jobsFile); err == nil && strings.TrimSpace(string(left)) != "" {
		t.Errorf("the walkthrough left background jobs running (pids %s)", strings.Fields(string(left)))
	}

	applierLog := filepath.Join(tmp, "kube-applier-aws.log")
	for i, c := range cmds {
		rc, err := os.ReadFile(out(i, "rc"))
		if err != nil {
			t.Fatalf("walkthrough stopped before %q (bash: %v)%s", c, runErr, logTail(applierLog))
		}
		stdout, _ := os.ReadFile(out(i, "out"))
		stderr, _ := os.ReadFile(out(i, "err"))
		t.Logf("$ %s\n%s%s", c, stdout, stderr)
		fail := func(format string, args ...any) {
			t.Fatalf("%q: "+format+"\nstdout:\n%s\nstderr:\n%s%s", append(append([]any{c}, args...), stdout, stderr, logTail(applierLog))...)
		}
		if code := strings.TrimSpace(string(rc)); code != "0" {
			fail("exit %s", code)
		}
		if len(stderr) != 0 {
			fail("wrote on stderr")
		}
		for _, lc := range walkthroughChecks {
			if strings.HasPrefix(c, lc.prefix) {
				if err := lc.check(c, string(stdout)); err != nil {
					fail("%v", err)
				}
			}
		}
	}
}

// waitForJobs waits until bash has run every command (it then lists its background jobs in
// jobsFile) or has ended, stops those jobs with SIGTERM, and returns bash's exit. After
// timeout, or 20 s after the SIGTERM, bash and its jobs are killed.
func waitForJobs(t *testing.T, bash *os.Process, done <-chan error, jobsFile string, timeout time.Duration) error {
	t.Helper()
	var jobs []int
	kill := func(sig syscall.Signal) {
		for _, pid := range jobs {
			_ = syscall.Kill(pid, sig)
		}
	}
	deadline := time.After(timeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-deadline:
			t.Errorf("the walkthrough did not end within %s", timeout)
			kill(syscall.SIGKILL)
			_ = bash.Kill()
			return <-done
		case <-tick.C:
			if jobs != nil {
				continue
			}
			data, err := os.ReadFile(jobsFile)
			if err != nil {
				continue
			}
			jobs = []int{}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					jobs = append(jobs, pid)
				}
			}
			kill(syscall.SIGTERM)
			deadline = time.After(20 * time.Second)
		}
	}
}

// logTail is the end of the applier's log, for failure messages.
func logTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return "\nlast lines of the applier's log:\n" + strings.Join(lines[max(0, len(lines)-30):], "\n")
}
