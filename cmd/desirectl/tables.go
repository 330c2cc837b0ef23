package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier"
)

func (a *app) newTablesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tables", Short: "Manage the six tables of a management cluster"}
	cmd.AddCommand(&cobra.Command{
		Use:   "create",
		Short: "Create the specs and status tables of the context's management cluster (idempotent)",
		Long: `Create mc-{cluster}-specs-{apply,delete,read}desires (with Streams NEW_AND_OLD_IMAGES) and
mc-{cluster}-status-{apply,delete,read}desires, each keyed by documentID and billed per request.
Tables that exist are left alone. For local development and tests; production tables usually
come from infrastructure code.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
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
			created, err := kubeapplier.EnsureTables(cmd.Context(), admin, s.TablePrefix, s.ManagementCluster)
			for _, name := range created {
				fmt.Fprintf(a.stdout, "table/%s created\n", name)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "6 tables ready for management cluster %s (%d created)\n", s.ManagementCluster, len(created))
			return nil
		}),
	})
	return cmd
}
