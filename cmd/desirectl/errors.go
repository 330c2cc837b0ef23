package main

import (
	"errors"
	"fmt"
)

// Exit codes, documented in the root command's help.
const (
	exitOK     = 0
	exitFailed = 1 // the operation failed: condition False, timeout, not found, DynamoDB error
	exitUsage  = 2 // bad usage or configuration
)

// exitError carries the exit code an error ends the process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is a usage or configuration error (exit 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// failedErrorf is an operation failure (exit 1).
func failedErrorf(format string, args ...any) error {
	return &exitError{code: exitFailed, err: fmt.Errorf(format, args...)}
}

// exitCode returns the code err ends the process with; untyped errors are def.
func exitCode(err error, def int) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return def
}
