package tables

import "github.com/kube-applier-aws/kubeapplier/api"

// Client gives typed access to the six tables of one management cluster: the specs tables
// read-only, the status tables read and written.
type Client struct {
	db      DynamoDBAPI
	layout  api.TableLayout
	cluster string
}

// NewClient returns the clients of the tables of managementCluster in the default layout;
// prefix is "" in production.
func NewClient(db DynamoDBAPI, prefix, managementCluster string) *Client {
	return NewLayoutClient(db, api.TableLayout{Prefix: prefix}, managementCluster)
}

// NewLayoutClient returns the clients of the tables of managementCluster, named by layout (a
// name or an ARN each: api.TableLayout.Name).
func NewLayoutClient(db DynamoDBAPI, layout api.TableLayout, managementCluster string) *Client {
	return &Client{db: db, layout: layout, cluster: managementCluster}
}

func (c *Client) name(t api.TableKind, k api.DesireKind) string {
	return c.layout.Name(c.cluster, t, k)
}

// ApplyDesireSpecs returns the read-only client of the ApplyDesire specs table.
func (c *Client) ApplyDesireSpecs() SpecReader[*api.ApplyDesire] {
	return New[*api.ApplyDesire](c.db, c.name(api.SpecsTable, api.KindApplyDesire))
}

// DeleteDesireSpecs returns the read-only client of the DeleteDesire specs table.
func (c *Client) DeleteDesireSpecs() SpecReader[*api.DeleteDesire] {
	return New[*api.DeleteDesire](c.db, c.name(api.SpecsTable, api.KindDeleteDesire))
}

// ReadDesireSpecs returns the read-only client of the ReadDesire specs table.
func (c *Client) ReadDesireSpecs() SpecReader[*api.ReadDesire] {
	return New[*api.ReadDesire](c.db, c.name(api.SpecsTable, api.KindReadDesire))
}

// ApplyDesireStatus returns the client of the ApplyDesire status table.
func (c *Client) ApplyDesireStatus() ResourceCRUD[*api.ApplyDesire] {
	return AsStatus(New[*api.ApplyDesire](c.db, c.name(api.StatusTable, api.KindApplyDesire)))
}

// DeleteDesireStatus returns the client of the DeleteDesire status table.
func (c *Client) DeleteDesireStatus() ResourceCRUD[*api.DeleteDesire] {
	return AsStatus(New[*api.DeleteDesire](c.db, c.name(api.StatusTable, api.KindDeleteDesire)))
}

// ReadDesireStatus returns the client of the ReadDesire status table.
func (c *Client) ReadDesireStatus() ResourceCRUD[*api.ReadDesire] {
	return AsStatus(New[*api.ReadDesire](c.db, c.name(api.StatusTable, api.KindReadDesire)))
}
