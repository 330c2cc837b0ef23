package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// printTable prints rows (the first is the header) aligned like kubectl.
func printTable(out io.Writer, rows [][]string) error {
	w := tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	return w.Flush()
}

// age is kubectl's AGE column.
func age(now, created time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(created))
}

// successfulCondition returns d's Successful condition, or nil.
func successfulCondition(d api.Desire) *api.Condition {
	if d == nil {
		return nil
	}
	return d.StatusCommon().Condition(api.ConditionSuccessful)
}

// successColumns are the SUCCESSFUL, REASON and MESSAGE columns of a desire whose spec
// document is spec: Unknown/Pending until the applier has reported on that spec.
func successColumns(status api.Desire, spec *api.DynamoDBMetadata) (successful, reason, message string) {
	c := successfulCondition(status)
	if c == nil || !answers(status.StatusCommon(), c, spec) {
		return string(api.ConditionUnknown), "Pending", describeStatus(status, spec, api.ConditionSuccessful)
	}
	return string(c.Status), c.Reason, oneLine(c.Message)
}

// readyColumn is the READY column of an ApplyDesire: its Ready condition (kstatus: the
// applied object is Current) as reported for spec; Unknown until reported.
func readyColumn(status api.Desire, spec *api.DynamoDBMetadata) string {
	a, ok := status.(*api.ApplyDesire)
	if !ok || a == nil {
		return string(api.ConditionUnknown)
	}
	c := a.Status.Condition(api.ConditionReady)
	if c == nil || !answers(&a.Status.CommonStatus, c, spec) {
		return string(api.ConditionUnknown)
	}
	return string(c.Status)
}

// desireDocument is a desire as `get -o yaml|json` prints it: the spec document's metadata
// and spec, and the status document's status.
type desireDocument struct {
	Kind api.DesireKind `json:"kind"`
	api.DynamoDBMetadata
	Spec   any `json:"spec"`
	Status any `json:"status,omitempty"`
}

type documentList struct {
	Kind  string           `json:"kind"`
	Items []desireDocument `json:"items"`
}

// printDocuments prints docs as JSON or YAML: a List, or the one document when single.
func printDocuments(out io.Writer, docs []desireDocument, single bool, format string) error {
	var v any = documentList{Kind: "List", Items: docs}
	if single && len(docs) == 1 {
		v = docs[0]
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if format == "yaml" {
		data, err = yaml.JSONToYAML(data)
	} else {
		var buf bytes.Buffer
		err = json.Indent(&buf, data, "", "    ")
		buf.WriteByte('\n')
		data = buf.Bytes()
	}
	if err != nil {
		return err
	}
	_, err = out.Write(data)
	return err
}
