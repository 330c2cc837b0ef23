// Package awslog adapts a logr.Logger for the AWS SDK (aws.Config.Logger), for the library
// and the binaries alike: the SDK's warnings (e.g. a response without the checksum header it
// expected, as DynamoDB Local sends them) are info lines, anything else (debug output, only
// logged when aws.Config.ClientLogMode asks for it) shows from V(4).
package awslog

import (
	"fmt"

	"github.com/aws/smithy-go/logging"
	"github.com/go-logr/logr"
)

// New returns the SDK logger writing to log, named "aws-sdk".
func New(log logr.Logger) logging.Logger {
	log = log.WithName("aws-sdk")
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		if c == logging.Warn {
			log.Info(fmt.Sprintf(format, v...))
			return
		}
		log.V(4).Info(fmt.Sprintf(format, v...))
	})
}
