package api

import (
	"errors"
	"strings"
	"testing"
)

// TestLayoutCheckRegion: a table given by ARN in another region than the DynamoDB client's is
// refused naming the table, both regions and the reason; names, and ARNs of the client's
// region (any account), pass; every such table is named.
func TestLayoutCheckRegion(t *testing.T) {
	const (
		east  = "arn:aws:dynamodb:us-east-1:111111111111:table/mc01-specs-applydesires"
		west  = "arn:aws:dynamodb:eu-west-1:111111111111:table/mc01-status-applydesires"
		west2 = "arn:aws:dynamodb:eu-west-1:222222222222:table/mc01-specs-readdesires"
	)
	for _, tc := range []struct {
		name   string
		tables map[string]string
		region string
		want   []string // "" none: accepted
	}{
		{"no overrides", nil, "us-east-1", nil},
		{"a name", map[string]string{"specs-applydesires": "mc01-specs"}, "us-east-1", nil},
		{"an ARN of the client's region, another account", map[string]string{"specs-applydesires": east}, "us-east-1", nil},
		{"an ARN of another region", map[string]string{"status-applydesires": west}, "us-east-1",
			[]string{`table status-applydesires (` + west + `) is in region eu-west-1, but the DynamoDB client calls region us-east-1`,
				"across accounts, not across regions"}},
		{"two of another region, both named", map[string]string{"specs-applydesires": east, "status-applydesires": west, "specs-readdesires": west2}, "us-east-1",
			[]string{"table status-applydesires", "table specs-readdesires"}},
		{"an ARN that does not parse is Validate's", map[string]string{"specs-applydesires": "arn:aws:dynamodb:x:1:table/y"}, "us-east-1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := TableLayout{Tables: tc.tables}.CheckRegion(tc.region)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("CheckRegion = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidLayout) {
				t.Fatalf("CheckRegion = %v, want ErrInvalidLayout", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
