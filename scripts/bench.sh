#!/usr/bin/env bash
# Runs the benchmarks (SPEC §11) and regenerates docs/benchmarks.md.
#
#   bash scripts/bench.sh [mqlite-bench options...]
#
# Installs what is missing, builds mqlite-bench with the `default` preset,
# runs every workload on every store (SQLite, LMDB, memory) plus the raw-SQL
# and raw-LMDB floors in ONE process
# (ratios are only meaningful within one run on these shared machines), keeps
# the JSON in docs/benchmarks/results.json and turns it into
# docs/benchmarks.md and the SVG plots beside it. Data files go to
# build/bench-data (a disk-backed directory; tmpfs would flatter the numbers).
# Progress: Google Benchmark prints a line per workload, long set-ups print
# percentages. Takes about twenty minutes (17m39s on the 2-core test machine with LMDB added).
#
# Extra arguments go to mqlite-bench, e.g. --benchmark_filter='sqlite' or
# --scale=smoke (then the report is written under build/bench-smoke instead
# of docs/, since smoke numbers mean nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target mqlite_bench

out_json=docs/benchmarks/results.json
out_md=docs/benchmarks.md
plots=docs/benchmarks
for a in "$@"; do
  if [[ "$a" == --scale=smoke || "$a" == --benchmark_filter=* || "$a" == --stores=* ]]; then
    # A partial or smoke run must not overwrite the committed report.
    out_json=build/bench-partial/results.json
    out_md=build/bench-partial/benchmarks.md
    plots=build/bench-partial/benchmarks
  fi
done
mkdir -p "$(dirname "$out_json")"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
# "+dirty" when the code differs from the commit (the report's own outputs aside).
if [[ -n "$(git status --porcelain -- . ':!docs/benchmarks.md' ':!docs/benchmarks' 2>/dev/null)" ]]; then
  commit="$commit+dirty"
fi

# Three repetitions of everything in random interleaved order; the report
# takes each median. Later flags in "$@" override these.
build/default/bench/mqlite-bench --data-dir=build/bench-data \
  --benchmark_repetitions=3 --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out_json" --benchmark_out_format=json \
  --benchmark_context=git_commit="$commit",repetitions=3 "$@"
python3 bench/report.py "$out_json" --out "$out_md" --plots "$plots"
