// Package logs is the one logging setup of the project's binaries (kube-applier-aws and
// desirectl): klog's text format, as Kubernetes components write it, at one -v verbosity
// for the binary's own logr.Logger, for client-go (which logs through klog, contextual or
// not) and for the AWS SDK.
//
// Verbosity: 0 info and errors; 1 debug (the applier's own); 4 trace; client-go logs its
// requests from 6 and response bodies from 8, Secret data included: never in production.
package logs

import (
	"io"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
)

// Setup returns a logger writing klog text lines to w at verbosity v, and sends klog's
// output (client-go's logs) through it at the same verbosity. It changes process-wide klog
// state: call it once, early in main (tests call it in turn, never in parallel).
func Setup(w io.Writer, v int) logr.Logger {
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(v), textlogger.Output(w)))
	// klog checks its own -v before it hands a line to the logger (klog.V(n).Info).
	var level klog.Level
	_ = level.Set(strconv.Itoa(v)) // sets klog's global verbosity; cannot fail for an int
	// ContextualLogger: klog.FromContext and klog.Background (newer client-go code) return log
	// itself, which checks its verbosity on its own.
	klog.SetLoggerWithOptions(log, klog.ContextualLogger(true))
	return log
}
