package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier"
)

func (a *app) newTablesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tables", Short: "Manage the six tables of a management cluster"}
	var statusIndex bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the specs and status tables of the context's management cluster (idempotent)",
		Long: `Create mc-{cluster}-specs-{apply,delete,read}desires (with Streams NEW_AND_OLD_IMAGES) and
mc-{cluster}-status-{apply,delete,read}desires, each keyed by documentID and billed per request.
Each status table gets the global secondary index ` + kubeapplier.StatusCheckIndexName + ` (partition key shard S,
sort key updateTime S, projecting version and applierTerm) that the applier's periodic status
check reads instead of Scanning the statuses; it is added to status tables that exist without
it. Tables that exist are otherwise left alone. For local development and tests; production
tables usually come from infrastructure code.

--status-index gives each status table the global secondary index updateTime-index (partition
key shard S, sort key updateTime S) that index-poll backends query, adding it to status tables
that exist without it.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: a.records(func(cmd *cobra.Command, _ []string) error {
			s, err := a.settings()
			if err != nil {
				return err
			}
			api, err := a.newDynamoDB(cmd.Context(), s)
			if err != nil {
				return err
			}
			admin, ok := api.(kubeapplier.TableAdminAPI)
			if !ok {
				return fmt.Errorf("the DynamoDB client cannot create tables")
			}
			var opts []kubeapplier.TableOption
			if statusIndex {
				opts = append(opts, kubeapplier.WithStatusIndex())
			}
			created, err := kubeapplier.EnsureTables(cmd.Context(), admin, s.TablePrefix, s.ManagementCluster, opts...)
			for _, name := range created {
				a.line(outputRecord{Event: "created", Table: name}, "table/"+name+" created")
			}
			if errors.Is(err, kubeapplier.ErrStatusIndexOutdated) {
				return fmt.Errorf("%w\nan index cannot change its key type: delete %s (aws dynamodb update-table --table-name TABLE --global-secondary-index-updates '[{\"Delete\":{\"IndexName\":\"%s\"}}]'), wait until it is gone, then run this again",
					err, kubeapplier.StatusIndexName, kubeapplier.StatusIndexName)
			}
			if err != nil {
				return err
			}
			for _, kind := range []kubeapplier.TableKind{kubeapplier.SpecsTable, kubeapplier.StatusTable} {
				for _, k := range kubeapplier.DesireKinds {
					name := kubeapplier.TableName(s.TablePrefix, s.ManagementCluster, kind, k)
					if a.output != "" && !slices.Contains(created, name) {
						a.collected = append(a.collected, outputRecord{Event: "ready", Table: name})
					}
				}
			}
			if a.output == "" {
				fmt.Fprintf(a.stdout, "6 tables ready for management cluster %s (%d created)\n", s.ManagementCluster, len(created))
			}
			if statusIndex {
				a.line(outputRecord{Event: "ready", Detail: "index " + kubeapplier.StatusIndexName + " on the 3 status tables"},
					fmt.Sprintf("index %s ready on the 3 status tables", kubeapplier.StatusIndexName))
			}
			return nil
		}),
	}
	a.addRecordsFlag(create)
	create.Flags().BoolVar(&statusIndex, "status-index", false, "also create the status tables' updateTime-index GSI (for index-poll backends)")
	cmd.AddCommand(create)
	return cmd
}
