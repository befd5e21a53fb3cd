#!/usr/bin/env bash
# Quick start, step 2 (and what CI runs, through .ci/run): install the
# dependencies, then build and test three configurations from CMakePresets.json:
#
#   default  RelWithDebInfo, every test (unit, store, integration, packaging);
#            ctest runs 3 at once on 2 cores: the two whole-kit runs against
#            PostgreSQL (grade, rerun) mostly wait on the server, and would
#            otherwise hold both slots for two minutes
#   asan     AddressSanitizer + UBSan, every test but the runner's grade
#            tables, the rerun harness runs and the LMDB tiny-map kit run
#            (labels `grade`, `rerun`, `map_growth`: they repeat the kit
#            already run per test; the default stage runs them)
#   tsan     ThreadSanitizer, the tests labelled `concurrency` (only their
#            executables are built)
#
# Every stage runs even if an earlier one failed. The output ends with a recap
# of each stage's ctest summary, the name of every failed test with its first
# assertion messages (so a log read from its tail still says what failed), and
# then ONE aggregate line in ctest's format,
#   "N% tests passed, F tests failed out of T"
# summed over the stages (a stage that failed to configure or build counts as
# one failed test, so that line never claims success for a broken stage). The
# exit status is non-zero if any stage failed. Per-stage ctest logs are kept in
# build/test-logs/.
#
# Environment:
#   MQLITE_TEST_STAGES    stages to run, default "default asan tsan"
#   CTEST_PARALLEL_LEVEL  ctest's own knob for running tests in parallel
#   MQLITE_TEST_PG_URL    a PostgreSQL server for the PostgreSQL tests; unset,
#                         each stage's ctest starts a throwaway cluster on
#                         127.0.0.1 (CTest fixture stores/postgres/tests/
#                         pg_test_cluster.sh) and stops it afterwards
set -euo pipefail
cd "$(dirname "$0")/.."

readonly LOG_DIR="build/test-logs"
readonly START=$SECONDS

elapsed() {  # seconds -> "3m07s"
  printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
}

banner() {
  printf '\n==== %s  [t+%s] ====\n' "$1" "$(elapsed $((SECONDS - START)))"
}

# ---- Stages --------------------------------------------------------------------
stage_lines=()   # recap lines
failed_stages=()
failed_tests=()  # "stage: ctest line" for each test ctest listed as failed
agg_total=0
agg_failed=0

# run_stage PRESET: configure, build and ctest one preset. Never exits the
# script; records the outcome in the globals above.
run_stage() {
  local preset="$1" t0=$SECONDS log="$LOG_DIR/$1.log" rc=0 outcome summary=""
  banner "$preset: configure + build + test"
  : >"$log"
  if ! cmake --preset "$preset"; then
    outcome="FAIL (configure)"
  elif ! cmake --build --preset "$preset"; then
    outcome="FAIL (build)"
  else
    ctest --preset "$preset" 2>&1 | tee "$log" || rc=$?
    summary="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -n 1 || true)"
    local re='^[0-9]+% tests passed, ([0-9]+) tests failed out of ([0-9]+)'
    local failed=0 total=0
    if [[ "$summary" =~ $re ]]; then
      failed="${BASH_REMATCH[1]}"
      total="${BASH_REMATCH[2]}"
    fi
    if ((rc != 0)); then
      outcome="FAIL (ctest exit $rc)"
      ((failed > 0)) || failed=1  # ctest failed without a failing test: count it
    elif ((total == 0)) && [[ "$preset" != "tsan" ]]; then
      outcome="FAIL (ran no tests)"
      failed=1
    elif ((total == 0)); then
      outcome="PASS (no tests labelled concurrency yet)"
    elif ((failed > 0)); then
      outcome="FAIL"
    else
      outcome="PASS"
    fi
    # ctest lists the failures near its summary; keep them for the recap at
    # the very end, where a CI log that shows only its tail still names them.
    local line
    while IFS= read -r line; do
      failed_tests+=("$preset: ${line#"${line%%[![:space:]]*}"}")
    done < <(sed -n '/^The following tests FAILED:/,/^Errors while running CTest/p' "$log" |
      grep -E '^[[:space:]]+[0-9]+ - ' || true)
    agg_total=$((agg_total + (total > failed ? total : failed)))
    agg_failed=$((agg_failed + failed))
  fi
  case "$outcome" in
    "FAIL (configure)" | "FAIL (build)")
      agg_total=$((agg_total + 1))
      agg_failed=$((agg_failed + 1))
      ;;
  esac
  [[ "$outcome" == PASS* ]] || failed_stages+=("$preset")
  local took
  took="$(elapsed $((SECONDS - t0)))"
  printf -- '---- %s: %s in %s\n' "$preset" "$outcome" "$took"
  stage_lines+=("$(printf '  %-8s %-34s %8s  %s' "$preset" "$outcome" "$took" "${summary:-no ctest summary}")")
}

main() {
  mkdir -p "$LOG_DIR"
  banner "deps"
  bash scripts/deps.sh

  local stages
  read -r -a stages <<<"${MQLITE_TEST_STAGES:-default asan tsan}"
  local s
  for s in "${stages[@]}"; do
    run_stage "$s"
  done

  banner "summary: total $(elapsed $((SECONDS - START)))"
  printf '%s\n' "${stage_lines[@]}"
  if ((${#failed_tests[@]} > 0)); then
    echo "failed tests:"
    printf '  %s\n' "${failed_tests[@]}"
    # The first assertion messages of the failures (gtest "Failure" blocks),
    # capped so the recap stays short; the whole output is in the logs.
    echo "first failure messages (whole output in $LOG_DIR/):"
    local f
    for f in "${failed_stages[@]}"; do
      awk -v s="  $f| " '/: Failure$/ { n = 5 }
        /\*\*\*(Failed|Timeout|Exception)/ || /^\[  FAILED  \] .*\(/ { print s $0 }
        n > 0 { print s $0; n-- }' "$LOG_DIR/$f.log" 2>/dev/null
    done | head -n 40
  fi
  if ((${#failed_stages[@]} > 0)); then
    echo "test.sh: FAILED stages: ${failed_stages[*]} (ctest logs in $LOG_DIR/)"
  else
    echo "test.sh: all stages passed"
  fi

  # The aggregate, in ctest's own words and rounding (never 100% with a failure).
  local passed=$((agg_total - agg_failed)) pct=0
  if ((agg_total > 0)); then
    pct=$(((passed * 100 + agg_total / 2) / agg_total))
    if ((agg_failed > 0 && pct > 99)); then pct=99; fi
  fi
  echo "${pct}% tests passed, ${agg_failed} tests failed out of ${agg_total}"
  ((${#failed_stages[@]} == 0))
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
