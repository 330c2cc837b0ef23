package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
)

// defaultPollInterval is how often waits read the status tables.
const defaultPollInterval = time.Second

// clock is the time source of waits; tests use a fake one.
type clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// app holds one invocation's I/O, dependencies and flags. Tests build one with fakes.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	userConfigDir  func() (string, error)
	clock          clock
	pollInterval   time.Duration
	// isTerminal reports whether a writer is a terminal: waits show progress on stderr then.
	isTerminal func(io.Writer) bool
	// newDynamoDB returns the DynamoDB client for the effective settings.
	newDynamoDB func(ctx context.Context, s settings) (dynamoDB, error)
	// newDiscovery returns a resolver backed by the cluster of kubeconfig (a path or a
	// $KUBECONFIG list), or an error when the cluster cannot be reached.
	newDiscovery func(ctx context.Context, kubeconfig string, warn func(string)) (resolver, error)
	// setupLogs, when set, replaces logs.Setup: tests that run an applier in this process
	// must not swap klog's process-wide logger under its goroutines (klog does not lock it).
	setupLogs func(w io.Writer, verbosity int) logr.Logger

	flags globalFlags
	root  *cobra.Command
	// output is the -o of a command printing lines; collected holds its records for -o
	// json|yaml (records.go).
	output    string
	collected []outputRecord

	discoveryOnce sync.Once
	discovery     resolver // nil when no cluster is reachable
	warned        map[string]bool
	// managementCluster is the one whose tables store connected to, for messages.
	managementCluster string
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, userConfigDir: os.UserConfigDir,
		clock: realClock{}, pollInterval: defaultPollInterval, isTerminal: isTerminal, newDynamoDB: newDynamoDBClient, newDiscovery: newDiscoveryResolver}
}

// run executes one command line and returns the exit code. Errors are printed on stderr, one
// line each, prefixed "error: ".
func (a *app) run(ctx context.Context, args []string) int {
	a.root = a.newRootCommand()
	a.root.SetArgs(args)
	a.root.SetIn(a.stdin)
	a.root.SetOut(a.stdout)
	a.root.SetErr(a.stderr)
	err := a.root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	// Errors that no RunE wrapped come from cobra itself: unknown commands, flags, arguments.
	code := exitCode(err, exitUsage)
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		if line != "" {
			fmt.Fprintln(a.stderr, "error: "+line)
		}
	}
	return code
}

// runE adapts a command body: errors that are not typed are operation failures (exit 1).
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		if err == nil {
			return nil
		}
		var e *exitError
		if errors.As(err, &e) {
			return err
		}
		return &exitError{code: exitFailed, err: err}
	}
}

// warnf prints a warning on stderr, once per distinct message.
func (a *app) warnf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if a.warned == nil {
		a.warned = map[string]bool{}
	}
	if a.warned[msg] {
		return
	}
	a.warned[msg] = true
	fmt.Fprintln(a.stderr, "warning: "+msg)
}

// store connects to the tables of the effective settings.
func (a *app) store(ctx context.Context) (*store, settings, error) {
	s, err := a.settings()
	if err != nil {
		return nil, s, err
	}
	db, err := a.newDynamoDB(ctx, s)
	if err != nil {
		return nil, s, err
	}
	a.managementCluster = s.ManagementCluster
	return newStore(db, s.layout(), s.ManagementCluster), s, nil
}

// clusterDiscovery returns the discovery resolver of --kubeconfig or $KUBECONFIG, or nil when
// neither is set or the cluster cannot be reached (with a warning).
func (a *app) clusterDiscovery(ctx context.Context) resolver {
	a.discoveryOnce.Do(func() {
		kc := a.flags.kubeconfig
		if kc == "" {
			kc = a.getenv("KUBECONFIG")
		}
		if kc == "" {
			return
		}
		r, err := a.newDiscovery(ctx, kc, func(msg string) { a.warnf("%s", msg) })
		if err != nil {
			a.warnf("cluster discovery unavailable (%s), resource names are guessed: %s", kc, oneLine(err.Error()))
			return
		}
		a.discovery = r
	})
	return a.discovery
}
