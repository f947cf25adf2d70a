#!/usr/bin/env bash
# The Prometheus rules: promtool's lint, then its unit tests
# (deploy/prometheus/shmbpf-rules.test.yml), each alert shown firing and not.
#   rules.sh <source dir>
set -euo pipefail
# shellcheck source=tests/deploy/lib.sh
. "$(dirname "$0")/lib.sh"
need promtool prometheus
cd "$1/deploy/prometheus"
promtool check rules shmbpf-rules.yml
promtool test rules shmbpf-rules.test.yml
