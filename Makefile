# Entry points. Integration tests need the local stack (DynamoDB Local, etcd, kube-apiserver);
# `make test` starts it when it is not running and stops it afterwards only if it started it.
SHELL := /bin/bash
STACK := hack/local-stack.sh
# Modules of their own: the api module (the desire contract for backends, no client-go), and
# examples that need dependencies the library must not have or must do without the library.
EXAMPLE_MODULES := api examples/backend-go examples/controller-runtime examples/monitoring

.PHONY: up down env status install test test-unit test-race lint demo bench bench-options bench-waitforstatus bench-sources chaos

up:
	@$(STACK) up

down:
	@$(STACK) down

# Prints the exports of the running stack, KUBECONFIG included: eval "$(make -s env)". They
# also set AWS_ENDPOINT_URL, AWS_REGION/AWS_DEFAULT_REGION and local credentials, so the AWS
# SDKs' default chain and the AWS CLI (`aws dynamodb list-tables`) reach DynamoDB Local.
env:
	@$(STACK) env

status:
	@$(STACK) status

# Builds kube-applier-aws and desirectl into bin/; put them on PATH with
#   export PATH="$PWD/bin:$PATH"
install:
	@mkdir -p bin
	go build -o bin/ ./cmd/kube-applier-aws ./cmd/desirectl

# KAA_INTEGRATION=1 makes a missing stack a failure instead of a skip. Then the tests run a
# second time under the race detector, integration tests included: the library's module and
# RACE_MODULES (examples/controller-runtime runs a built binary, examples/monitoring parses
# PromQL: nothing for the detector). The second pass adds ~5-7 min on 2 cores
# (the root package ~5 of them; the first pass takes ~4); the invariant
# world's time windows scale under it (applier_invariants_raceon_test.go).
RACE_MODULES := api
test:
	@started=; \
	if ! $(STACK) status >/dev/null 2>&1; then $(STACK) up >/dev/null && started=1 || exit 1; fi; \
	eval "$$($(STACK) env)"; \
	log=$$(mktemp); rc=0; set -o pipefail; \
	KAA_INTEGRATION=1 go test ./... -count=1 -timeout 30m 2>&1 | tee -a $$log || rc=$$?; \
	for m in $(EXAMPLE_MODULES); do \
		(cd $$m && KAA_INTEGRATION=1 go test ./... -count=1 -timeout 10m) 2>&1 | tee -a $$log || rc=$$?; \
	done; \
	KAA_INTEGRATION=1 go test -race ./... -count=1 -timeout 30m 2>&1 | tee -a $$log || rc=$$?; \
	for m in $(RACE_MODULES); do \
		(cd $$m && KAA_INTEGRATION=1 go test -race ./... -count=1 -timeout 10m) 2>&1 | tee -a $$log || rc=$$?; \
	done; \
	if [ -n "$$started" ]; then $(STACK) down; fi; \
	hack/failures.sh $$log; rm -f $$log; \
	exit $$rc

# Unit tests only: integration tests skip without the stack's environment.
test-unit:
	go test ./...
	for m in $(EXAMPLE_MODULES); do (cd $$m && go test ./...) || exit 1; done

# Unit tests only, under the race detector (make test runs the integration tests under it too).
test-race:
	go test -race ./...
	for m in $(RACE_MODULES); do (cd $$m && go test -race ./...) || exit 1; done

lint:
	@out=$$(gofmt -l .); \
	if [ -n "$$out" ]; then echo "gofmt: not formatted:"; echo "$$out"; exit 1; fi
	go vet ./...
	go vet -tags chaos ./
	@# The library itself must not depend on controller-runtime (only its example does).
	@if go list -deps . | grep -q '^sigs.k8s.io/controller-runtime'; then echo "the library imports controller-runtime"; exit 1; fi
	for m in $(EXAMPLE_MODULES); do (cd $$m && go vet ./...) || exit 1; done
	@# The api module and the Go backend example must build without Kubernetes modules.
	@for m in api examples/backend-go; do if (cd $$m && go list -deps ./... | grep -q '^k8s.io/'); then echo "$$m depends on k8s.io modules"; exit 1; fi; done

# The main job end to end on the local real components (see hack/demo.sh).
demo:
	@hack/demo.sh

# Benchmark (hack/bench/README.md): builds and runs the real binary against the local stack,
# which it starts when it is not running and stops afterwards only if it started it.
# Default sizes finish in about 17 minutes on 2 cores; pass flags with BENCH_FLAGS, e.g.
#   make bench BENCH_FLAGS='-desires 500 -reads 50 -samples 20 -idle 15s'
bench:
	@started=; \
	if ! $(STACK) status >/dev/null 2>&1; then $(STACK) up >/dev/null && started=1 || exit 1; fi; \
	eval "$$($(STACK) env)"; \
	rc=0; go run ./hack/bench $(BENCH_FLAGS) || rc=$$?; \
	if [ -n "$$started" ]; then $(STACK) down; fi; \
	exit $$rc

# Only the desire options' scenario (issue #40; hack/bench/README.md "options"): N=200 fresh
# ApplyDesires per way (no option, statusFeedback, health rules), two rounds; ~4 minutes.
bench-options:
	@$(MAKE) --no-print-directory bench BENCH_FLAGS='-only options -desires 200 $(BENCH_FLAGS)'

# A backend's WaitForStatus following the status stream vs polling it (hack/bench/waitforstatus;
# docs/performance.md "WaitForStatus: stream vs polling"): DynamoDB Local only, no applier; ~1 min.
bench-waitforstatus:
	@started=; \
	if ! $(STACK) status >/dev/null 2>&1; then $(STACK) up >/dev/null && started=1 || exit 1; fi; \
	eval "$$($(STACK) env)"; \
	rc=0; go run ./hack/bench/waitforstatus $(BENCH_FLAGS) || rc=$$?; \
	if [ -n "$$started" ]; then $(STACK) down; fi; \
	exit $$rc

# Only the change sources' scenario (issue #41 item 4; hack/bench/README.md "sources"): the applier
# restarted on streams, index-poll 1s and index-poll at its defaults (15 s / 5 min); ~4 minutes.
bench-sources:
	@$(MAKE) --no-print-directory bench BENCH_FLAGS='-only sources $(BENCH_FLAGS)'

# Chaos tests (applier_chaos_test.go, build tag chaos): restart DynamoDB Local and kube-apiserver, kill
# leaders, throttle DynamoDB. They run on a stack of their own (.stack-chaos, DynamoDB with
# -dbPath so a restart keeps the tables), started fresh and always stopped afterwards; the
# development stack is left alone. About 5 minutes on 2 cores.
CHAOS_DIR := $(CURDIR)/.stack-chaos
chaos:
	@export KAA_STACK_DIR=$(CHAOS_DIR) KAA_DYNAMODB_DBPATH=$(CHAOS_DIR)/dynamodb-data; \
	$(STACK) down >/dev/null 2>&1; rm -rf $(CHAOS_DIR); \
	$(STACK) up >/dev/null || exit 1; \
	eval "$$($(STACK) env)"; \
	log=$$(mktemp); rc=0; set -o pipefail; \
	KAA_CHAOS=1 KAA_INTEGRATION=1 go test -tags chaos -run '^TestChaos' -count=1 -timeout 20m -v . 2>&1 | tee $$log || rc=$$?; \
	$(STACK) down; rm -rf $(CHAOS_DIR); \
	hack/failures.sh $$log; rm -f $$log; \
	exit $$rc
