package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"
)

// outputRecord is one line of a command's output as -o json|yaml prints it: what happened
// (event) to what (a desire, its object, a table or a context).
type outputRecord struct {
	Event   string `json:"event"`             // created, configured, unchanged, deleted, removed, condition met, switched, ...
	Desire  string `json:"desire,omitempty"`  // "applydesire/<id>"
	Object  string `json:"object,omitempty"`  // "ConfigMap default/foo"
	Table   string `json:"table,omitempty"`   // a DynamoDB table
	Context string `json:"context,omitempty"` // a desirectl context
	Detail  string `json:"detail,omitempty"`  // anything else the line says
}

// addRecordsFlag registers -o for a command whose output is lines (apply, delete, wait,
// remove, tables create, config): by default the lines, with -o json or yaml one list of
// records, printed when the command ends (also when it fails: what was done).
func (a *app) addRecordsFlag(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&a.output, "output", "o", "", "output format: \"\" (lines), json or yaml")
}

// records wraps a command body that prints lines with a.line: it checks -o, runs f and prints
// the records collected for -o json|yaml.
func (a *app) records(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return runE(func(cmd *cobra.Command, args []string) error {
		switch a.output {
		case "", "json", "yaml":
		default:
			return usageErrorf("--output must be json or yaml, not %q", a.output)
		}
		a.collected = []outputRecord{}
		err := f(cmd, args)
		if a.output != "" {
			if perr := printStructured(a, a.collected, a.output); perr != nil && err == nil {
				err = perr
			}
		}
		return err
	})
}

// line prints text as one line of output, or, with -o json|yaml, keeps rec for the end.
func (a *app) line(rec outputRecord, text string) {
	if a.output == "" {
		fmt.Fprintln(a.stdout, text)
		return
	}
	a.collected = append(a.collected, rec)
}

// printStructured prints v as indented JSON or as YAML.
func printStructured(a *app, v any, format string) error {
	data, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return err
		}
	} else {
		data = append(data, '\n')
	}
	_, err = a.stdout.Write(data)
	return err
}

// withRecords registers -o on cmd (see addRecordsFlag) and returns it.
func (a *app) withRecords(cmd *cobra.Command) *cobra.Command {
	a.addRecordsFlag(cmd)
	return cmd
}
