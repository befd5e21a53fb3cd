#!/usr/bin/env bash
# Quick start, step 1: install the build dependencies, build mqlite with the
# `default` preset (RelWithDebInfo, build/default) and run the quickstart
# example: a tour of the API on an SQLite file, with throughput numbers.
# Extra arguments go to the quickstart, e.g. `bash scripts/run.sh --messages 100000`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
cmake --preset default
# Only what the quickstart needs; scripts/test.sh builds everything.
cmake --build --preset default --target mqlite_quickstart
exec build/default/examples/quickstart/mqlite_quickstart "$@"
