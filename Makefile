# Entry points. Integration tests need the local stack (DynamoDB Local, etcd, kube-apiserver);
# `make test` starts it when it is not running and stops it afterwards only if it started it.
SHELL := /bin/bash
STACK := hack/local-stack.sh

.PHONY: up down env status test test-unit lint demo

up:
	@$(STACK) up

down:
	@$(STACK) down

env:
	@$(STACK) env

status:
	@$(STACK) status

# KAA_INTEGRATION=1 makes a missing stack a failure instead of a skip.
test:
	@started=; \
	if ! $(STACK) status >/dev/null 2>&1; then $(STACK) up >/dev/null && started=1 || exit 1; fi; \
	eval "$$($(STACK) env)"; \
	rc=0; KAA_INTEGRATION=1 go test ./... -count=1 -timeout 30m || rc=$$?; \
	if [ -n "$$started" ]; then $(STACK) down; fi; \
	exit $$rc

# Unit tests only: integration tests skip without the stack's environment.
test-unit:
	go test ./...

lint:
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi
	go vet ./...

# The main job end to end on the local real components (see hack/demo.sh).
demo:
	@hack/demo.sh
