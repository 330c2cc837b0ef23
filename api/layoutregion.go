package api

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// CheckRegion checks that every table l gives by ARN lives in region, the region of the
// DynamoDB client that will call it, and returns every one that does not (ErrInvalidLayout,
// joined), naming the table and both regions. A DynamoDB client calls its own region's
// endpoint: a table's ARN in TableName reaches a table of another account there (DynamoDB
// resource-based policies), never one of another region. Names, and ARNs that do not parse
// (Validate's to refuse), are not checked.
func (l TableLayout) CheckRegion(region string) error {
	keys := make([]string, 0, len(l.Tables))
	for k := range l.Tables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		v := l.Tables[k]
		if !strings.HasPrefix(v, "arn:") {
			continue
		}
		a, err := ParseTableARN(v)
		if err != nil || a.Region == region {
			continue
		}
		errs = append(errs, fmt.Errorf("%w: table %s (%s) is in region %s, but the DynamoDB client calls region %s: "+
			"DynamoDB reaches a table by ARN across accounts, not across regions (use a client of region %s)",
			ErrInvalidLayout, k, v, a.Region, region, a.Region))
	}
	return errors.Join(errs...)
}
