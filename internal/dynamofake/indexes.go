package dynamofake

import (
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// gsi is a global secondary index of a table: sparse (an item without both key attributes is
// not in it) and projected on its keys, the table's key and the attributes it includes.
type gsi struct {
	hash, rng string
	include   []string
	// held, when set, is what the index shows instead of the table: a GSI is eventually
	// consistent, and a test holds it to show an older state.
	held map[string]item
}

// AddIndex gives table (made when missing) the GSI name, keyed by hash and rng, projecting
// include besides the keys. A Scan with IndexName reads it; a Scan of an index the table does
// not have fails with a ValidationException, as DynamoDB's does.
func (d *DB) AddIndex(table, name, hash, rng string, include ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.tableLocked(table)
	if t.indexes == nil {
		t.indexes = map[string]*gsi{}
	}
	t.indexes[name] = &gsi{hash: hash, rng: rng, include: include}
}

// HoldIndex freezes what the index shows (its state now) until ReleaseIndex: writes to the
// table since do not reach it yet.
func (d *DB) HoldIndex(table, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g := d.indexLocked(table, name)
	g.held = g.view(d.tableLocked(table).items)
}

// ReleaseIndex lets the index show the table again.
func (d *DB) ReleaseIndex(table, name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.indexLocked(table, name).held = nil
}

func (d *DB) indexLocked(table, name string) *gsi {
	t := d.tables[table]
	if t == nil || t.indexes[name] == nil {
		panic(fmt.Sprintf("dynamofake: table %s has no index %s", table, name))
	}
	return t.indexes[name]
}

// view returns the index's items of items: those with both key attributes, projected.
func (g *gsi) view(items map[string]item) map[string]item {
	out := map[string]item{}
	for id, it := range items {
		if it[g.hash] == nil || (g.rng != "" && it[g.rng] == nil) {
			continue
		}
		p := item{keyAttr: it[keyAttr], g.hash: it[g.hash]}
		if g.rng != "" {
			p[g.rng] = it[g.rng]
		}
		for _, a := range g.include {
			if v, ok := it[a]; ok {
				p[a] = v
			}
		}
		out[id] = p
	}
	return out
}

// scanIndexLocked answers a Scan of in.IndexName (counted as a Scan of "table/index").
func (d *DB) scanIndexLocked(in *dynamodb.ScanInput) (*dynamodb.ScanOutput, error) {
	name, index := aws.ToString(in.TableName), aws.ToString(in.IndexName)
	if err := d.enterLocked("Scan", name+"/"+index); err != nil {
		return nil, err
	}
	if d.missing[name] {
		return nil, notFound("Table: " + name)
	}
	t := d.tableLocked(name)
	g := t.indexes[index]
	if g == nil {
		return nil, &smithy.GenericAPIError{Code: "ValidationException",
			Message: "The table does not have the specified index: " + index}
	}
	if aws.ToBool(in.ConsistentRead) {
		return nil, &smithy.GenericAPIError{Code: "ValidationException",
			Message: "Consistent reads are not supported on global secondary indexes"}
	}
	items := g.held
	if items == nil {
		items = g.view(t.items)
	}
	return d.scanPageLocked(&table{name: name, items: items}, in.ExclusiveStartKey), nil
}

// describeIndexes adds t's indexes to desc, ACTIVE, their key attributes defined as S (the
// only type AddIndex keys by), as DescribeTable shows them.
func describeIndexes(t *table, desc *types.TableDescription) {
	defined := map[string]bool{}
	def := func(a string) {
		if a != "" && !defined[a] {
			defined[a] = true
			desc.AttributeDefinitions = append(desc.AttributeDefinitions, types.AttributeDefinition{AttributeName: aws.String(a), AttributeType: types.ScalarAttributeTypeS})
		}
	}
	def(keyAttr)
	names := make([]string, 0, len(t.indexes))
	for n := range t.indexes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		g := t.indexes[n]
		ks := []types.KeySchemaElement{{AttributeName: aws.String(g.hash), KeyType: types.KeyTypeHash}}
		def(g.hash)
		if g.rng != "" {
			ks = append(ks, types.KeySchemaElement{AttributeName: aws.String(g.rng), KeyType: types.KeyTypeRange})
			def(g.rng)
		}
		proj := &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}
		if len(g.include) > 0 {
			proj = &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: append([]string(nil), g.include...)}
		}
		desc.GlobalSecondaryIndexes = append(desc.GlobalSecondaryIndexes, types.GlobalSecondaryIndexDescription{
			IndexName: aws.String(n), KeySchema: ks, Projection: proj, IndexStatus: types.IndexStatusActive})
	}
}
