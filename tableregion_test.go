package kubeapplier

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kube-applier-aws/kubeapplier/api"
)

// TestOptionsTableRegion: New refuses a table given by ARN in another region than the one its
// DynamoDB client calls (from AWSConfig, or a client that tells its region), naming both
// regions, before any call (ErrInvalidOptions); an ARN of that region, and a client that
// tells no region (a fake), are accepted.
func TestOptionsTableRegion(t *testing.T) {
	const (
		westARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/mc01-specs-applydesires"
		eastARN = "arn:aws:dynamodb:us-east-1:123456789012:table/mc01-specs-applydesires"
	)
	for _, tc := range []struct {
		name      string
		arn       string
		awsConfig bool   // the clients built from AWSConfig (region us-east-1), else the offline fake
		want      string // "" accepted
	}{
		{"another region than AWSConfig's", westARN, true, "is in region eu-west-1, but the DynamoDB client calls region us-east-1"},
		{"AWSConfig's region", eastARN, true, ""},
		{"a client that tells no region", westARN, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, opts := newOffline(t)
			opts.Tables = api.TableLayout{Tables: map[string]string{"specs-applydesires": tc.arn}}
			if tc.awsConfig {
				opts.DynamoDB, opts.Streams = nil, nil
				opts.AWSConfig = &aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}
			}
			_, err := New(opts)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New = %v, want accepted", err)
			case tc.want != "" && (!errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New = %v, want ErrInvalidOptions with %q", err, tc.want)
			}
			if n := len(o.db.CallLog()); n > 0 {
				t.Errorf("%d DynamoDB calls in New", n)
			}
		})
	}
}
