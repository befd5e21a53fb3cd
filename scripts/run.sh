#!/usr/bin/env bash
# Quick start, step 1: install the build dependencies, build mqlite with the
# `default` preset (RelWithDebInfo, build/default), then
#   1. grade the embedded stores with the conformance kit (SPEC §12): the
#      mqlite-tck runner prints a progress line per test and the G1–G8 grade
#      table for the SQLite store, the LMDB store and the in-memory store;
#   2. run the quickstart example: a tour of the API on an SQLite file, with
#      throughput numbers.
# Exits non-zero if either grade has a failing test or the quickstart fails.
# Extra arguments go to the quickstart, e.g. `bash scripts/run.sh --messages 100000`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
cmake --preset default
# Only what this script runs; scripts/test.sh builds everything.
cmake --build --preset default --target mqlite_tck_runner mqlite_quickstart

status=0
for store in sqlite lmdb memory; do
  printf '\n==== conformance grade: %s ====\n' "$store"
  build/default/tck/runner/mqlite-tck --store "$store" \
    --json "build/default/tck/runner/grade-$store.json" || status=1
done
printf '\n==== quickstart ====\n'
build/default/examples/quickstart/mqlite_quickstart "$@" || status=1
exit "$status"
