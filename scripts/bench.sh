#!/usr/bin/env bash
# Runs the benchmarks (SPEC §11) and regenerates docs/benchmarks.md.
#
#   bash scripts/bench.sh [mqlite-bench options...]
#   bash scripts/bench.sh postgres [mqlite-bench options...]
#
# `postgres` runs the PostgreSQL store and its SKIP LOCKED floor instead,
# and regenerates docs/benchmarks-postgres.md (their own run: the server is a
# process of its own, and the ratios that matter are the store's to its
# floor). It starts a throwaway cluster with PostgreSQL's default fsync=on
# (stores/postgres/tests/pg_test_cluster.sh, MQLITE_PG_DURABLE=1) on
# 127.0.0.1 and stops it afterwards, unless MQLITE_BENCH_PG_URL names a
# server to use (the bench creates and drops schemas named bench_*).
# Over an hour on the 2-core test machine (102 workloads, 3 interleaved
# repetitions; a run on 2026-12-06 was stopped unfinished after 60 minutes);
# about 27 minutes with --benchmark_repetitions=1 (2026-12-07).
#
# Installs what is missing, builds mqlite-bench with the `default` preset,
# runs every workload on every store (SQLite, LMDB, memory) plus the raw-SQL
# and raw-LMDB floors in ONE process
# (ratios are only meaningful within one run on these shared machines), keeps
# the JSON in docs/benchmarks/results.json and turns it into
# docs/benchmarks.md and the SVG plots beside it. Data files go to
# build/bench-data (a disk-backed directory; tmpfs would flatter the numbers).
# Progress: Google Benchmark prints a line per workload, long set-ups print
# percentages. Takes about half an hour (about 32 minutes on the 2-core test
# machine in December 2026).
#
# Extra arguments go to mqlite-bench, e.g. --benchmark_filter='sqlite' or
# --scale=smoke (then the report is written under build/bench-smoke instead
# of docs/, since smoke numbers mean nothing).
set -euo pipefail
cd "$(dirname "$0")/.."

postgres=0
if [[ "${1:-}" == postgres ]]; then
  postgres=1
  shift
fi

bash scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target mqlite_bench

out_json=docs/benchmarks/results.json
out_md=docs/benchmarks.md
plots=docs/benchmarks
extra=()
if [[ "$postgres" == 1 ]]; then
  out_json=docs/benchmarks-postgres/results.json
  out_md=docs/benchmarks-postgres.md
  plots=docs/benchmarks-postgres
  pg_state="$PWD/build/bench-pg"
  if [[ -n "${MQLITE_BENCH_PG_URL:-}" ]]; then
    mkdir -p "$pg_state"
    printf '%s\n' "$MQLITE_BENCH_PG_URL" >"$pg_state/url"
  else
    trap 'bash stores/postgres/tests/pg_test_cluster.sh stop "$pg_state"' EXIT
    MQLITE_PG_DURABLE=1 bash stores/postgres/tests/pg_test_cluster.sh start "$pg_state"
  fi
  extra=(--stores=postgres,pg_floor "--pg-url=@$pg_state/url")
fi
for a in "$@"; do
  if [[ "$a" == --scale=smoke || "$a" == --benchmark_filter=* || "$a" == --stores=* ]]; then
    # A partial or smoke run must not overwrite the committed report.
    out_json=build/bench-partial/results.json
    out_md=build/bench-partial/$(basename "$out_md")
    plots=build/bench-partial/$(basename "$plots")
  fi
done
mkdir -p "$(dirname "$out_json")"
commit="$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
# "+dirty" when the code differs from the commit (the report's own outputs aside).
if [[ -n "$(git status --porcelain -- . ':!docs/benchmarks.md' ':!docs/benchmarks' ':!docs/benchmarks-postgres.md' ':!docs/benchmarks-postgres' 2>/dev/null)" ]]; then
  commit="$commit+dirty"
fi

# Three repetitions of everything in random interleaved order; the report
# takes each median. Later flags in "$@" override these; a
# --benchmark_repetitions=N among them is also what the report's settings
# table says (the PostgreSQL run takes about 27 minutes with N=1).
reps=3
for a in "$@"; do
  if [[ "$a" =~ ^--benchmark_repetitions=([0-9]+)$ ]]; then reps="${BASH_REMATCH[1]}"; fi
done
build/default/bench/mqlite-bench --data-dir=build/bench-data \
  --benchmark_repetitions="$reps" --benchmark_enable_random_interleaving=true \
  --benchmark_out="$out_json" --benchmark_out_format=json \
  --benchmark_context=git_commit="$commit",repetitions="$reps" ${extra[@]+"${extra[@]}"} "$@"
python3 bench/report.py "$out_json" --out "$out_md" --plots "$plots"
