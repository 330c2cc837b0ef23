package dynamofake

import (
	"context"
	"regexp"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// keyCondition matches the key conditions Query takes here: `hash = :v`, optionally
// `AND rng OP :v` (OP one of = < <= > >=) or `AND rng BETWEEN :a AND :b`; names may be
// placeholders (#n).
var keyCondition = regexp.MustCompile(`^\s*(\S+)\s*=\s*(:\w+)\s*(?:(?i:AND)\s+(\S+)\s*(?:(<=|>=|=|<|>)\s*(:\w+)|(?i:BETWEEN)\s+(:\w+)\s+(?i:AND)\s+(:\w+)))?\s*$`)

// Query implements a GSI Query (IndexName required): the items of the index (sparse,
// projected, what HoldIndex holds while held: eventually consistent) whose hash key equals
// the value and whose range key (a string, compared as DynamoDB compares S: by bytes) meets
// the condition, in range-key order (then documentID), paged by Limit or PageSize with a
// LastEvaluatedKey of the index's keys and the table's. A consistent Query of an index, an
// unknown index or a condition it cannot read fail with a ValidationException, as in DynamoDB.
// Counted as "Query" and "Query:table/index".
func (d *DB) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := d.lockFor(ctx); err != nil {
		return nil, err
	}
	defer d.mu.Unlock()
	name, index := aws.ToString(in.TableName), aws.ToString(in.IndexName)
	if err := d.enterLocked("Query", name+"/"+index); err != nil {
		return nil, err
	}
	if d.missing[name] {
		return nil, notFound("Table: " + name)
	}
	t := d.tableLocked(name)
	g := t.indexes[index]
	switch {
	case index == "":
		return nil, validation("Query needs an IndexName here (the tables are keyed by documentID alone)")
	case g == nil:
		return nil, validation("The table does not have the specified index: " + index)
	case aws.ToBool(in.ConsistentRead):
		return nil, validation("Consistent reads are not supported on global secondary indexes")
	}
	m := keyCondition.FindStringSubmatch(aws.ToString(in.KeyConditionExpression))
	if m == nil {
		return nil, validation("KeyConditionExpression not supported by the fake: " + aws.ToString(in.KeyConditionExpression))
	}
	attr := func(n string) string {
		if strings.HasPrefix(n, "#") {
			return in.ExpressionAttributeNames[n]
		}
		return n
	}
	str := func(v string) (string, bool) {
		s, ok := in.ExpressionAttributeValues[v].(*types.AttributeValueMemberS)
		if !ok {
			return "", false
		}
		return s.Value, true
	}
	hashVal, ok := str(m[2])
	if attr(m[1]) != g.hash || !ok {
		return nil, validation("Query condition must name the index's hash key " + g.hash + " with a string value")
	}
	match := func(string) bool { return true }
	if m[3] != "" {
		if attr(m[3]) != g.rng {
			return nil, validation("Query condition must name the index's range key " + g.rng)
		}
		switch {
		case m[4] != "":
			v, ok := str(m[5])
			if !ok {
				return nil, validation("range key value must be a string")
			}
			match = map[string]func(string) bool{
				"=": func(s string) bool { return s == v }, "<": func(s string) bool { return s < v },
				"<=": func(s string) bool { return s <= v }, ">": func(s string) bool { return s > v },
				">=": func(s string) bool { return s >= v }}[m[4]]
		default:
			lo, ok1 := str(m[6])
			hi, ok2 := str(m[7])
			if !ok1 || !ok2 {
				return nil, validation("BETWEEN values must be strings")
			}
			match = func(s string) bool { return lo <= s && s <= hi }
		}
	}
	items := g.held
	if items == nil {
		items = g.view(t.items)
	}
	var hits []item
	for _, it := range items {
		h, ok := it[g.hash].(*types.AttributeValueMemberS)
		if !ok || h.Value != hashVal {
			continue
		}
		r, _ := it[g.rng].(*types.AttributeValueMemberS)
		if g.rng != "" && (r == nil || !match(r.Value)) {
			continue
		}
		hits = append(hits, it)
	}
	order := func(it item) string {
		r, _ := it[g.rng].(*types.AttributeValueMemberS)
		if r == nil {
			return "\x00" + keyOf(it)
		}
		return r.Value + "\x00" + keyOf(it)
	}
	sort.Slice(hits, func(i, j int) bool { return order(hits[i]) < order(hits[j]) })
	start := 0
	if in.ExclusiveStartKey != nil {
		after := order(in.ExclusiveStartKey)
		start = sort.Search(len(hits), func(i int) bool { return order(hits[i]) > after })
	}
	limit := d.PageSize
	if in.Limit != nil && (limit == 0 || int(*in.Limit) < limit) {
		limit = int(*in.Limit)
	}
	end := len(hits)
	if limit > 0 && start+limit < end {
		end = start + limit
	}
	out := &dynamodb.QueryOutput{Items: hits[start:end]}
	out.Count, out.ScannedCount = int32(len(out.Items)), int32(len(out.Items))
	if end < len(hits) {
		last := hits[end-1]
		out.LastEvaluatedKey = item{keyAttr: last[keyAttr], g.hash: last[g.hash]}
		if g.rng != "" {
			out.LastEvaluatedKey[g.rng] = last[g.rng]
		}
	}
	return out, nil
}
