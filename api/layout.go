package api

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// DefaultTableFormat is the name format of this project's tables:
// "mc-{cluster}-{table}-{kind}", e.g. "mc-mc1-specs-applydesires". The deployments of
// openshift-online/rosa-hyperfleet (terraform/modules/kube-applier-dynamodb) name theirs
// "{cluster}-{table}-{kind}".
const DefaultTableFormat = "mc-{cluster}-{table}-{kind}"

// The placeholders of a table name format (TableLayout.Format).
const (
	// PlaceholderCluster is the management cluster's name.
	PlaceholderCluster = "{cluster}"
	// PlaceholderTable is the TableKind: "specs" or "status".
	PlaceholderTable = "{table}"
	// PlaceholderKind is the DesireKind lower-cased with an "s": "applydesires",
	// "deletedesires" or "readdesires".
	PlaceholderKind = "{kind}"
)

// ErrInvalidLayout: a TableLayout whose format, override or resulting name DynamoDB would
// refuse, or which names a table this module does not have. Returned wrapped.
var ErrInvalidLayout = errors.New("invalid table layout")

// TableLayout says how the six tables of a management cluster are named: each table is
// Prefix + Format with its placeholders filled in, unless Tables overrides it. The zero value
// is this project's layout (DefaultTableFormat, no prefix, no override), the one TableName
// gives. A table given by ARN may live in another AWS account (reached through DynamoDB
// resource-based policies: examples/deploy/aws/cross-account): DynamoDB takes a table's ARN
// wherever it takes a TableName, DescribeTable included, so its stream is found as a named
// table's is. Check a layout with Validate before use: Name does not.
type TableLayout struct {
	// Prefix is prepended to every name made from Format (tests keep their tables apart with
	// one); never to an override. Default "".
	Prefix string
	// Format is the name of each table with the placeholders PlaceholderCluster,
	// PlaceholderTable and PlaceholderKind ("{cluster}", "{table}", "{kind}"); every one is
	// optional, but the six names it gives must differ unless Tables overrides the ones that
	// collide. Default DefaultTableFormat.
	Format string
	// Tables overrides tables one by one: key TableKey(table, kind) (e.g.
	// "specs-applydesires"), value the table's name or its ARN
	// ("arn:aws:dynamodb:REGION:ACCOUNT:table/NAME", see ParseTableARN), used as given.
	Tables map[string]string
	// FoldedDeletes says the management cluster has no DeleteDesire tables: deletions are
	// ApplyDesires of type Delete (ApplyTypeDelete) in the ApplyDesire tables, as upstream's
	// forks of rosa-hyperfleet-kube-applier keep them (docs/contract.md "The folded Delete").
	// Kinds then leaves KindDeleteDesire out: four tables, not six. Default false.
	FoldedDeletes bool
}

// Kinds returns the desire kinds that have tables in l, in DesireKinds order: all three, or
// ApplyDesire and ReadDesire when FoldedDeletes.
func (l TableLayout) Kinds() []DesireKind {
	if !l.FoldedDeletes {
		return DesireKinds
	}
	return []DesireKind{KindApplyDesire, KindReadDesire}
}

// TableName returns "{prefix}mc-{cluster}-{specs|status}-{applydesires|deletedesires|readdesires}",
// the name of a table in the default layout (TableLayout{Prefix: prefix}.Name). prefix is ""
// in production; tests set one to keep their tables apart.
func TableName(prefix, cluster string, table TableKind, kind DesireKind) string {
	return TableLayout{Prefix: prefix}.Name(cluster, table, kind)
}

// TableKey returns the key of a table in TableLayout.Tables and in the --table flags:
// "{table}-{kind}", e.g. "specs-applydesires".
func TableKey(table TableKind, kind DesireKind) string {
	return string(table) + "-" + kindPlural(kind)
}

// TableKeys lists the six keys of TableKey, specs tables first, in DesireKinds order.
func TableKeys() []string {
	var keys []string
	for _, t := range []TableKind{SpecsTable, StatusTable} {
		for _, k := range DesireKinds {
			keys = append(keys, TableKey(t, k))
		}
	}
	return keys
}

// ParseTableKey is TableKey's inverse; ErrInvalidLayout for a key naming no table.
func ParseTableKey(key string) (TableKind, DesireKind, error) {
	for _, t := range []TableKind{SpecsTable, StatusTable} {
		for _, k := range DesireKinds {
			if TableKey(t, k) == key {
				return t, k, nil
			}
		}
	}
	return "", "", fmt.Errorf("%w: unknown table %q (want one of %s)", ErrInvalidLayout, key, strings.Join(TableKeys(), ", "))
}

func kindPlural(k DesireKind) string { return strings.ToLower(string(k)) + "s" }

// Name returns what to pass as TableName for one table of cluster: the override of
// TableKey(table, kind) when there is one (a name or an ARN), else Prefix + Format filled in.
func (l TableLayout) Name(cluster string, table TableKind, kind DesireKind) string {
	if v, ok := l.Tables[TableKey(table, kind)]; ok && v != "" {
		return v
	}
	f := l.Format
	if f == "" {
		f = DefaultTableFormat
	}
	return l.Prefix + strings.NewReplacer(PlaceholderCluster, cluster, PlaceholderTable, string(table),
		PlaceholderKind, kindPlural(kind)).Replace(f)
}

// placeholder matches anything between braces, so that a misspelt placeholder is refused
// rather than left in a name.
var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

// Validate checks l for cluster and returns every problem (ErrInvalidLayout, joined): a
// placeholder Format does not know, a brace left over, a key of Tables naming no table, an
// override that is neither a valid table name nor a table ARN (ParseTableARN), a name that is
// no valid DynamoDB table name (3 to 255 characters of a-z, A-Z, 0-9, '_', '-', '.': the
// DynamoDB Developer Guide, "Naming rules"), and two tables with the same name; with
// FoldedDeletes, only the four tables of Kinds are named, and an override of a DeleteDesire
// table is refused.
func (l TableLayout) Validate(cluster string) error {
	var errs []error
	for _, p := range placeholder.FindAllString(l.Format, -1) {
		if p != PlaceholderCluster && p != PlaceholderTable && p != PlaceholderKind {
			errs = append(errs, fmt.Errorf("%w: format %q: unknown placeholder %s (known: %s, %s, %s)",
				ErrInvalidLayout, l.Format, p, PlaceholderCluster, PlaceholderTable, PlaceholderKind))
		}
	}
	if rest := placeholder.ReplaceAllString(l.Format, ""); strings.ContainsAny(rest, "{}") {
		errs = append(errs, fmt.Errorf("%w: format %q: unbalanced brace", ErrInvalidLayout, l.Format))
	}
	keys := make([]string, 0, len(l.Tables))
	for k := range l.Tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, kind, err := ParseTableKey(k); err != nil {
			errs = append(errs, err)
		} else if l.FoldedDeletes && kind == KindDeleteDesire {
			errs = append(errs, fmt.Errorf("%w: table %s: the folded layout (FoldedDeletes) has no DeleteDesire tables", ErrInvalidLayout, k))
		}
		if l.Tables[k] == "" {
			errs = append(errs, fmt.Errorf("%w: table %s: empty override", ErrInvalidLayout, k))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	seen := map[string]string{}
	for _, t := range []TableKind{SpecsTable, StatusTable} {
		for _, k := range l.Kinds() {
			key, name := TableKey(t, k), l.Name(cluster, t, k)
			if err := checkTableRef(name); err != nil {
				errs = append(errs, fmt.Errorf("table %s: %w", key, err))
				continue
			}
			short := TableShortName(name)
			if other, ok := seen[short]; ok {
				errs = append(errs, fmt.Errorf("%w: tables %s and %s are both named %q", ErrInvalidLayout, other, key, short))
			}
			seen[short] = key
		}
	}
	return errors.Join(errs...)
}

// tableNameChars is DynamoDB's rule for a table name's characters.
var tableNameChars = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// CheckTableName returns nil for a valid DynamoDB table name (3 to 255 characters of a-z,
// A-Z, 0-9, '_', '-', '.'), ErrInvalidLayout otherwise.
func CheckTableName(name string) error {
	if len(name) < 3 || len(name) > 255 {
		return fmt.Errorf("%w: table name %q: %d characters, want 3 to 255", ErrInvalidLayout, name, len(name))
	}
	if !tableNameChars.MatchString(name) {
		return fmt.Errorf("%w: table name %q: only a-z, A-Z, 0-9, '_', '-' and '.' are allowed", ErrInvalidLayout, name)
	}
	return nil
}

// checkTableRef checks a name or, when it starts with "arn:", an ARN.
func checkTableRef(s string) error {
	if strings.HasPrefix(s, "arn:") {
		_, err := ParseTableARN(s)
		return err
	}
	return CheckTableName(s)
}

// TableARN is the parsed ARN of a DynamoDB table:
// "arn:{Partition}:dynamodb:{Region}:{Account}:table/{Name}".
type TableARN struct {
	Partition, Region, Account, Name string
}

// String returns the ARN.
func (a TableARN) String() string {
	return "arn:" + a.Partition + ":dynamodb:" + a.Region + ":" + a.Account + ":table/" + a.Name
}

var (
	arnPartition = regexp.MustCompile(`^aws(-[a-z]+)*$`)
	arnRegion    = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)
	arnAccount   = regexp.MustCompile(`^[0-9]{12}$`)
)

// ParseTableARN parses the ARN of a DynamoDB table (partition aws, aws-cn, aws-us-gov…; a
// region; a 12-digit account; "table/" and a valid table name, CheckTableName). The ARN of a
// stream or an index ("table/NAME/stream/…", "table/NAME/index/…") is refused: ErrInvalidLayout.
func ParseTableARN(s string) (TableARN, error) {
	bad := func(why string) (TableARN, error) {
		return TableARN{}, fmt.Errorf("%w: table ARN %q: %s (want arn:aws:dynamodb:REGION:ACCOUNT:table/NAME)", ErrInvalidLayout, s, why)
	}
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" {
		return bad("not an ARN")
	}
	a := TableARN{Partition: parts[1], Region: parts[3], Account: parts[4]}
	switch {
	case !arnPartition.MatchString(a.Partition):
		return bad("unknown partition")
	case parts[2] != "dynamodb":
		return bad("not a DynamoDB ARN")
	case !arnRegion.MatchString(a.Region):
		return bad("no region")
	case !arnAccount.MatchString(a.Account):
		return bad("the account is not 12 digits")
	case !strings.HasPrefix(parts[5], "table/"):
		return bad("not a table")
	}
	a.Name = strings.TrimPrefix(parts[5], "table/")
	if strings.Contains(a.Name, "/") {
		return bad("the ARN of a stream or an index, not of a table")
	}
	if err := CheckTableName(a.Name); err != nil {
		return TableARN{}, fmt.Errorf("table ARN %q: %w", s, err)
	}
	return a, nil
}

// TableShortName returns a table's name from its name or its ARN (what follows "table/",
// and what precedes any "/index/…" or "/stream/…"). Metrics label a table by it: the same
// dashboards serve every layout, and a label holds no account number.
func TableShortName(nameOrARN string) string {
	if !strings.HasPrefix(nameOrARN, "arn:") {
		return nameOrARN
	}
	_, rest, ok := strings.Cut(nameOrARN, ":table/")
	if !ok {
		return nameOrARN
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// ParseTableOverride parses one override as the --table flags take it: "KEY=NAME" or
// "KEY=ARN", KEY a TableKey (e.g. "specs-applydesires=arn:aws:dynamodb:…:table/mc1-specs-applydesires").
// It checks the key and the name or ARN; ErrInvalidLayout otherwise.
func ParseTableOverride(s string) (key, nameOrARN string, err error) {
	key, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("%w: table override %q: want KEY=NAME or KEY=ARN, KEY one of %s", ErrInvalidLayout, s, strings.Join(TableKeys(), ", "))
	}
	if _, _, err := ParseTableKey(key); err != nil {
		return "", "", err
	}
	if err := checkTableRef(v); err != nil {
		return "", "", fmt.Errorf("table %s: %w", key, err)
	}
	return key, v, nil
}
