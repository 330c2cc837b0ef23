// Command desirectl writes desires into the kube-applier DynamoDB specs tables and reads their
// outcome from the status tables, the way kubectl works with a cluster. See `desirectl --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := newApp(os.Stdin, os.Stdout, os.Stderr).run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
