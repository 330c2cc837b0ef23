#!/usr/bin/env bash
# Installs the few system tools the local stack needs, only when they are missing.
# go, node and npm are expected on the machine already; everything else comes from Debian apt.
#   java    - runs DynamoDB Local (Amazon's jar)
#   openssl - service-account keys, tokens, npm integrity check
#   curl    - readiness probes
#   make    - the project's entry points
#   aws     - the AWS CLI, which a test runs with what `make env` exports (awscli)
#   python3-boto3 - the Python backend example's test
set -euo pipefail

declare -A pkg=([java]=openjdk-17-jre-headless [openssl]=openssl [curl]=curl [make]=make [aws]=awscli)
missing=()
for tool in java openssl curl make aws; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${pkg[$tool]}")
done
for tool in go npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "ensure-tools: $tool is required but not installed" >&2; exit 1; }
done
# python3 with boto3 runs examples/backend-python (TestIntegrationBackendPython).
command -v python3 >/dev/null 2>&1 && python3 -c 'import boto3' >/dev/null 2>&1 || missing+=(python3-boto3)
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "ensure-tools: installing ${missing[*]}" >&2
sudo=()
[[ $(id -u) -eq 0 ]] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
