#!/usr/bin/env bash
# Fails if the committed generated files differ from what hack/update-codegen.sh
# produces now (customapi-gen --verify generates into a temporary directory and
# compares; it writes nothing here).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec hack/update-codegen.sh --verify
