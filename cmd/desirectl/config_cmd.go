package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

func (a *app) newConfigCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Manage contexts in the desirectl config file",
		Long: `Manage contexts in the desirectl config file: a YAML file at --config, else $` + configEnv + `,
else <user config dir>/desirectl/config.yaml.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(a.newSetContextCommand(), a.newUseContextCommand(), a.newGetContextsCommand(),
		a.newCurrentContextCommand(), a.newDeleteContextCommand())
	return cmd
}

func (a *app) newSetContextCommand() *cobra.Command {
	var e contextEntry
	cmd := &cobra.Command{
		Use:   "set-context NAME",
		Short: "Create a context, or change the given fields of an existing one",
		Example: `  desirectl config set-context local --aws-region us-east-1 --endpoint-url http://localhost:8000 \
      --management-cluster mc-1 --cluster-id cluster-1`,
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	// These shadow the global overrides of the same names: here they are the values to store.
	registerContextFlags(cmd.Flags(), &e, "")
	var tables []string
	cmd.Flags().StringArrayVar(&tables, flagTable, nil, tableFlagHelp)
	cmd.RunE = a.records(func(cmd *cobra.Command, args []string) error {
		cfg, path, err := a.loadConfig()
		if err != nil {
			return err
		}
		name := args[0]
		if strings.TrimSpace(name) == "" {
			return usageErrorf("context name must not be empty")
		}
		cur := cfg.context(name)
		verb := "modified"
		if cur == nil {
			cur = &contextEntry{Name: name}
			cfg.Contexts = append(cfg.Contexts, cur)
			verb = "created"
		}
		copyChangedFields(cur, &e, cmd.Flags().Changed)
		if err := setTables(cur, tables); err != nil {
			return err
		}
		if cur.ManagementCluster != "" {
			if err := cur.layout().Validate(cur.ManagementCluster); err != nil {
				return usageErrorf("context %q: %v", name, err)
			}
		}
		if err := saveConfig(path, cfg); err != nil {
			return err
		}
		a.line(outputRecord{Event: verb, Context: name}, fmt.Sprintf("Context %q %s.", name, verb))
		return nil
	})
	a.addRecordsFlag(cmd)
	return cmd
}

func (a *app) newUseContextCommand() *cobra.Command {
	return a.withRecords(&cobra.Command{
		Use:   "use-context NAME",
		Short: "Make a context the current one",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: a.records(func(_ *cobra.Command, args []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg.context(args[0]) == nil {
				return contextNotFound(args[0], path)
			}
			cfg.CurrentContext = args[0]
			if err := saveConfig(path, cfg); err != nil {
				return err
			}
			a.line(outputRecord{Event: "switched", Context: args[0]}, fmt.Sprintf("Switched to context %q.", args[0]))
			return nil
		}),
	})
}

func (a *app) newGetContextsCommand() *cobra.Command {
	return a.withRecords(&cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts (-o json|yaml: the config file's contexts and current-context)",
		Args:  usageArgs(cobra.NoArgs),
		RunE: a.records(func(_ *cobra.Command, _ []string) error {
			cfg, _, err := a.loadConfig()
			if err != nil {
				return err
			}
			if a.output != "" {
				format := a.output
				a.output = "" // printed here, not as records
				return printStructured(a, cfg, format)
			}
			rows := [][]string{{"CURRENT", "NAME", "MANAGEMENT-CLUSTER", "CLUSTER-ID", "TASK-KEY", "AWS-REGION", "ENDPOINT-URL", "TABLE-PREFIX"}}
			contexts := slices.Clone(cfg.Contexts)
			slices.SortFunc(contexts, func(x, y *contextEntry) int { return strings.Compare(x.Name, y.Name) })
			for _, e := range contexts {
				cur := ""
				if e.Name == cfg.CurrentContext {
					cur = "*"
				}
				rows = append(rows, []string{cur, e.Name, e.ManagementCluster, e.ClusterID, e.TaskKey, e.AWSRegion, e.EndpointURL, e.TablePrefix})
			}
			return printTable(a.stdout, rows)
		}),
	})
}

func (a *app) newCurrentContextCommand() *cobra.Command {
	return a.withRecords(&cobra.Command{
		Use:   "current-context",
		Short: "Print the current context's name",
		Args:  usageArgs(cobra.NoArgs),
		RunE: a.records(func(_ *cobra.Command, _ []string) error {
			cfg, _, err := a.loadConfig()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return usageErrorf("current-context is not set")
			}
			a.line(outputRecord{Event: "current", Context: cfg.CurrentContext}, cfg.CurrentContext)
			return nil
		}),
	})
}

func (a *app) newDeleteContextCommand() *cobra.Command {
	return a.withRecords(&cobra.Command{
		Use:   "delete-context NAME",
		Short: "Delete a context",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: a.records(func(_ *cobra.Command, args []string) error {
			cfg, path, err := a.loadConfig()
			if err != nil {
				return err
			}
			if !cfg.deleteContext(args[0]) {
				return contextNotFound(args[0], path)
			}
			if cfg.CurrentContext == args[0] {
				cfg.CurrentContext = ""
				a.warnf("this removed your current context; set a new one with 'desirectl config use-context NAME'")
			}
			if err := saveConfig(path, cfg); err != nil {
				return err
			}
			a.line(outputRecord{Event: "deleted", Context: args[0], Detail: path}, fmt.Sprintf("deleted context %s from %s", args[0], path))
			return nil
		}),
	})
}
