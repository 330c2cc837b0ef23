package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// overdueAfter is how late a heartbeat may be before status calls it stale: the leader
// promises a write at least every keepaliveSeconds (5 min idle, within 5 s of a change), so a heartbeat more than 2 minutes past that promise means no leader is writing.
const overdueAfter = 2 * time.Minute

// staleAge is the age from which hb is stale: its keepalive plus overdueAfter, or staleAfter
// when set.
func staleAge(hb *api.Heartbeat, staleAfter time.Duration) time.Duration {
	if staleAfter > 0 {
		return staleAfter
	}
	return time.Duration(hb.KeepaliveSeconds)*time.Second + overdueAfter
}

func (a *app) newStatusCommand() *cobra.Command {
	var (
		staleAfter time.Duration
		output     string
	)
	cmd := &cobra.Command{
		Use:     "status",
		Aliases: []string{"cluster-info"},
		Short:   "Show the applier's heartbeat: leader, lag, queues, desires by outcome, watermarks",
		Long: `Read the heartbeat the leading kube-applier-aws writes for the context's management cluster
(documentID _heartbeat in its ApplyDesire status table) and print it.

It warns and exits 1 at once when the heartbeat says its leader stopped (its last write, when
it shut down cleanly, until another replica takes a term), and when it is more than 2 minutes overdue (older than the
keepalive it states, 5m, plus 2m: an idle leader rewrites an unchanged heartbeat only every 5
minutes), or older than --stale-after when given, or when there is none: no applier has led
with these tables.

Per desire kind: the desires in the leader's cache, how many have no status for their current
version yet (unanswered), the watermark (every spec that had landed with an updateTime at or before it has a
status answering it), the workqueue depth, and the newest stream record read with its lag.`,
		Example: `  desirectl status
  desirectl cluster-info -o json`,
		Args: usageArgs(cobra.NoArgs),
	}
	cmd.Flags().DurationVar(&staleAfter, "stale-after", 0, "a heartbeat older than this is stale: warn and exit 1 (default: its keepalive + 2m)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "output format: \"\" (readable), json or yaml")
	cmd.RunE = runE(func(cmd *cobra.Command, _ []string) error {
		if output != "" && output != "json" && output != "yaml" {
			return usageErrorf("--output must be json, yaml or empty, not %q", output)
		}
		hb, err := a.readHeartbeat(cmd.Context())
		if err != nil {
			return err
		}
		age := a.clock.Now().Sub(hb.UpdateTime)
		switch output {
		case "json":
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(hb); err != nil {
				return err
			}
		case "yaml":
			if err := printStructured(a, hb, "yaml"); err != nil {
				return err
			}
		default:
			printHeartbeat(a.stdout, hb, a.clock.Now())
		}
		if hb.Stopped != nil {
			return failedErrorf("the leader %s stopped %s ago (shut down): no kube-applier-aws leads management cluster %s until another replica takes a term",
				hb.Leader, roundAge(a.clock.Now().Sub(*hb.Stopped)), hb.ManagementCluster)
		}
		if limit := staleAge(hb, staleAfter); age > limit {
			return failedErrorf("the heartbeat is %s old (more than %s): is kube-applier-aws running and leading for management cluster %s?",
				roundAge(age), limit, hb.ManagementCluster)
		}
		return nil
	})
	return cmd
}

// readHeartbeat reads the heartbeat of the context's management cluster; none is a failure.
func (a *app) readHeartbeat(ctx context.Context) (*api.Heartbeat, error) {
	s, err := a.settings()
	if err != nil {
		return nil, err
	}
	db, err := a.newDynamoDB(ctx, s)
	if err != nil {
		return nil, err
	}
	hb, err := api.ReadHeartbeatFrom(ctx, db, s.layout().Name(s.ManagementCluster, api.StatusTable, api.KindApplyDesire))
	if errors.Is(err, api.ErrNotFound) {
		return nil, failedErrorf("no heartbeat for management cluster %s: is kube-applier-aws running for it?", s.ManagementCluster)
	}
	if err != nil {
		return nil, dbError(err)
	}
	return hb, nil
}

func roundAge(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}

// printHeartbeat writes hb readably, ages relative to now.
func printHeartbeat(w io.Writer, hb *api.Heartbeat, now time.Time) {
	ago := func(t time.Time) string {
		return t.UTC().Format(time.RFC3339) + " (" + roundAge(now.Sub(t)).String() + " ago)"
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Management cluster:\t%s\n", hb.ManagementCluster)
	fmt.Fprintf(tw, "Leader:\t%s\n", hb.Leader)
	fmt.Fprintf(tw, "Term:\t%d, since %s\n", hb.ApplierTerm, ago(hb.TermStart))
	fmt.Fprintf(tw, "Version:\t%s\n", hb.Version)
	if hb.Stopped != nil { // its last write: no next one is due
		fmt.Fprintf(tw, "Heartbeat written:\t%s\n", ago(hb.UpdateTime))
		fmt.Fprintf(tw, "Stopped:\t%s: the leader shut down; no applier writes until another replica takes a term\n", ago(*hb.Stopped))
	} else {
		fmt.Fprintf(tw, "Heartbeat written:\t%s, next by %s\n", ago(hb.UpdateTime),
			hb.UpdateTime.Add(time.Duration(hb.KeepaliveSeconds)*time.Second).UTC().Format(time.RFC3339))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tDESIRES\tUNANSWERED\tWATERMARK\tQUEUE\tSTREAM LAG\tNEWEST RECORD\tOUTCOMES")
	for _, k := range api.DesireKinds {
		hk, ok := hb.Kinds[string(k)]
		if !ok {
			continue
		}
		wm, newest, lag := "-", "-", "-"
		if hk.Watermark != nil {
			wm = hk.Watermark.UTC().Format(time.RFC3339Nano)
		}
		if hk.NewestRecord != nil {
			newest, lag = hk.NewestRecord.UTC().Format(time.RFC3339), fmt.Sprintf("%.1fs", hk.StreamLagSeconds)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\n", k, hk.Desires, hk.Unanswered, wm, hk.QueueDepth, lag, newest, outcomes(hk))
	}
	tw.Flush()
}

// outcomes is "True/NoErrors=10 False/KubeAPIError=2 (Degraded: KubeAPIError=2)".
func outcomes(hk api.HeartbeatKind) string {
	join := func(m map[string]int) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s=%d", k, m[k])
		}
		return strings.Join(parts, " ")
	}
	s := join(hk.Successful)
	if len(hk.Degraded) > 0 {
		s += " (Degraded: " + join(hk.Degraded) + ")"
	}
	if s == "" {
		return "-"
	}
	return s
}

// waitWatermark waits until the heartbeat's watermark of kind reaches at, printing the
// watermark it saw last on timeout.
func (a *app) waitWatermark(ctx context.Context, kind api.DesireKind, at time.Time, timeout time.Duration) error {
	deadline := a.clock.Now().Add(timeout)
	var last string
	for {
		hb, err := a.readHeartbeat(ctx)
		if err != nil && exitCode(err, exitFailed) == exitUsage {
			return err
		}
		if err == nil {
			last = "no watermark (no " + string(kind) + " in the leader's cache)"
			if w := hb.Kinds[string(kind)].Watermark; w != nil {
				if !w.Before(at) {
					a.line(outputRecord{Event: "watermark reached", Detail: fmt.Sprintf("%s watermark %s reached %s", kind, w.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano))},
						fmt.Sprintf("%s watermark %s reached %s", kind, w.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano)))
					return nil
				}
				last = "watermark " + w.UTC().Format(time.RFC3339Nano)
			}
		} else {
			last = err.Error()
		}
		if !a.clock.Now().Before(deadline) {
			return failedErrorf("timed out after %s waiting for the %s watermark to reach %s: %s", timeout, kind, at.UTC().Format(time.RFC3339Nano), last)
		}
		if err := a.clock.Sleep(ctx, a.pollInterval); err != nil {
			return err
		}
	}
}

// runWaitWatermark is `wait --for=watermark=TIME`: no TYPE NAME, --kind apply by default.
func (a *app) runWaitWatermark(ctx context.Context, at, kind string, timeout time.Duration) error {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return usageErrorf("--for=watermark=TIME: %q is not an RFC 3339 time", at)
	}
	k := api.KindApplyDesire
	if kind != "" {
		var ok bool
		if k, ok = desireKindFlag[strings.ToLower(kind)]; !ok {
			return usageErrorf("--kind must be apply, delete or read, not %q", kind)
		}
	}
	return a.waitWatermark(ctx, k, t, timeout)
}
