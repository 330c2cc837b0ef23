package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/spf13/cobra"

	"github.com/kube-applier-aws/kubeapplier/api"
)

func (a *app) newTablesCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "tables", Short: "Manage the six tables of a management cluster"}
	var statusIndex, specIndex, statusStreams bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create the specs and status tables of the context's management cluster (idempotent)",
		Long: `Create mc-{cluster}-specs-{apply,delete,read}desires (with Streams NEW_AND_OLD_IMAGES) and
mc-{cluster}-status-{apply,delete,read}desires (or the names of the context's table-name-format
and tables), each keyed by documentID and billed per request.
Each status table gets the global secondary index ` + api.StatusCheckIndexName + ` (partition key shard S,
sort key updateTime S, projecting version and applierTerm) that the applier's periodic status
check reads instead of Scanning the statuses; it is added to status tables that exist without
it. Tables that exist are otherwise left alone. For local development and tests; production
tables usually come from infrastructure code.

--status-index gives each status table the global secondary index updateTime-index (partition
key shard S, sort key updateTime S) that index-poll backends query, adding it to status tables
that exist without it.

--spec-index gives each specs table the global secondary index ` + api.SpecIndexName + ` (partition
key shard S, sort key updateTime S, keys only) that an applier run with --change-source=index-poll
queries, adding it to specs tables that exist without it.

--status-streams turns DynamoDB Streams (NEW_AND_OLD_IMAGES) on for the status tables, on
existing ones too, so backends follow the statuses instead of polling them (api
WithStatusStreamsAPI); a status stream of another view type is an error.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: a.records(func(cmd *cobra.Command, _ []string) error {
			s, err := a.settings()
			if err != nil {
				return err
			}
			db, err := a.newDynamoDB(cmd.Context(), s)
			if err != nil {
				return err
			}
			admin, ok := db.(api.TableAdminAPI)
			if !ok {
				return fmt.Errorf("the DynamoDB client cannot create tables")
			}
			var opts []api.TableOption
			if statusIndex {
				opts = append(opts, api.WithStatusIndex())
			}
			if specIndex {
				opts = append(opts, api.WithSpecIndex())
			}
			if statusStreams {
				opts = append(opts, api.WithStatusStreams())
			}
			created, err := api.EnsureLayoutTables(cmd.Context(), admin, s.layout(), s.ManagementCluster, opts...)
			for _, name := range created {
				a.line(outputRecord{Event: "created", Table: name}, "table/"+name+" created")
			}
			if errors.Is(err, api.ErrStatusIndexOutdated) {
				return fmt.Errorf("%w\nan index cannot change its key type: delete %s (aws dynamodb update-table --table-name TABLE --global-secondary-index-updates '[{\"Delete\":{\"IndexName\":\"%s\"}}]'), wait until it is gone, then run this again",
					err, api.StatusIndexName, api.StatusIndexName)
			}
			if err != nil {
				return err
			}
			for _, kind := range []api.TableKind{api.SpecsTable, api.StatusTable} {
				for _, k := range s.layout().Kinds() {
					name := s.layout().Name(s.ManagementCluster, kind, k)
					if a.output != "" && !slices.Contains(created, name) {
						a.collected = append(a.collected, outputRecord{Event: "ready", Table: name})
					}
				}
			}
			if a.output == "" {
				fmt.Fprintf(a.stdout, "%d tables ready for management cluster %s (%d created)\n", 2*len(s.layout().Kinds()), s.ManagementCluster, len(created))
			}
			if statusIndex {
				a.line(outputRecord{Event: "ready", Detail: "index " + api.StatusIndexName + " on the 3 status tables"},
					fmt.Sprintf("index %s ready on the 3 status tables", api.StatusIndexName))
			}
			if specIndex {
				a.line(outputRecord{Event: "ready", Detail: "index " + api.SpecIndexName + " on the specs tables"},
					fmt.Sprintf("index %s ready on the specs tables", api.SpecIndexName))
			}
			return nil
		}),
	}
	a.addRecordsFlag(create)
	create.Flags().BoolVar(&statusIndex, "status-index", false, "also create the status tables' updateTime-index GSI (for index-poll backends)")
	create.Flags().BoolVar(&specIndex, "spec-index", false, "also create the specs tables' "+api.SpecIndexName+" GSI (for an applier with --change-source=index-poll)")
	create.Flags().BoolVar(&statusStreams, "status-streams", false, "also turn Streams (NEW_AND_OLD_IMAGES) on for the status tables (backends follow statuses)")
	cmd.AddCommand(create, a.newTablesDeleteCommand())
	return cmd
}

// tableDeleter is what tables delete needs of the DynamoDB client (*dynamodb.Client has it).
type tableDeleter interface {
	DeleteTable(ctx context.Context, in *dynamodb.DeleteTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// tableGoneTimeout bounds the wait for one deleted table to be gone: AWS keeps a table
// DELETING for seconds to minutes; a create of the same name fails until then.
const tableGoneTimeout = 5 * time.Minute

func (a *app) newTablesDeleteCommand() *cobra.Command {
	var yes bool
	del := &cobra.Command{
		Use:   "delete --yes",
		Short: "Delete the six tables of the context's management cluster, with every desire and status in them",
		Long: `Delete mc-{cluster}-specs-{apply,delete,read}desires and mc-{cluster}-status-{apply,delete,read}desires
of the context's management cluster (or the names its table-name-format and tables give), and wait until each is gone, so that
'tables create' can follow. Every desire and status in them is lost; the objects the desires
made stay in the cluster. A table that does not exist is skipped. --yes is required. Stop the
appliers of that management cluster first: an applier without its tables is not ready. For
local development and tests, like 'tables create'.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: a.records(func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return usageErrorf("tables delete deletes every desire and status of the management cluster: add --yes")
			}
			s, err := a.settings()
			if err != nil {
				return err
			}
			db, err := a.newDynamoDB(cmd.Context(), s)
			if err != nil {
				return err
			}
			admin, ok := db.(tableDeleter)
			if !ok {
				return fmt.Errorf("the DynamoDB client cannot delete tables")
			}
			deleted, missing := 0, 0
			for _, kind := range []api.TableKind{api.SpecsTable, api.StatusTable} {
				for _, k := range s.layout().Kinds() {
					name := s.layout().Name(s.ManagementCluster, kind, k)
					_, err := admin.DeleteTable(cmd.Context(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
					var notFound *types.ResourceNotFoundException
					if errors.As(err, &notFound) {
						missing++
						continue
					}
					if err != nil {
						return fmt.Errorf("delete table %s: %w", name, err)
					}
					waiter := dynamodb.NewTableNotExistsWaiter(admin, func(o *dynamodb.TableNotExistsWaiterOptions) {
						o.MinDelay, o.MaxDelay = 100*time.Millisecond, 5*time.Second
					})
					if err := waiter.Wait(cmd.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)}, tableGoneTimeout); err != nil {
						return fmt.Errorf("table %s deleted, but still there: %w", name, err)
					}
					deleted++
					a.line(outputRecord{Event: "deleted", Table: name}, "table/"+name+" deleted")
				}
			}
			if a.output == "" {
				fmt.Fprintf(a.stdout, "%d tables of management cluster %s deleted (%d did not exist)\n", deleted, s.ManagementCluster, missing)
			}
			return nil
		}),
	}
	a.addRecordsFlag(del)
	del.Flags().BoolVar(&yes, "yes", false, "confirm: delete the tables and every desire and status in them")
	return del
}
