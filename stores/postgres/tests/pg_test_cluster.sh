#!/usr/bin/env bash
# The PostgreSQL server the PostgreSQL store's tests run against, as a CTest
# fixture (stores/postgres/tests/CMakeLists.txt):
#
#   pg_test_cluster.sh start STATE_DIR   # FIXTURES_SETUP
#   pg_test_cluster.sh stop STATE_DIR    # FIXTURES_CLEANUP
#
# start: if MQLITE_TEST_PG_URL is set, that server is used and nothing is
# started. Otherwise a throwaway cluster: initdb in a fresh temp directory,
# then pg_ctl start listening on 127.0.0.1 only (its socket in that
# directory), on a free port — tried from a random one upward, since a busy
# port makes the server exit and pg_ctl report it. The server refuses to run
# as root, so as root both run as the `postgres` OS user. Either way the
# connection string the tests use is written to STATE_DIR/url (the tests read
# it through MQLITE_TEST_PG_URL_FILE).
#
# The tests' cluster runs with fsync=off (it holds nothing worth keeping);
# MQLITE_PG_DURABLE=1 keeps PostgreSQL's default fsync=on, for the
# benchmarks (scripts/bench.sh postgres), where syncs are what is measured.
#
# stop: stops and deletes the cluster `start` made, if any (immediate mode:
# it holds nothing worth keeping).
#
# restart: an immediate shutdown and a start with the same options, of the
# cluster `start` made in STATE_DIR (the store's server-restart test starts
# one of its own for this, so the shared test server is never restarted).
set -euo pipefail

cmd="${1:-}"
state="${2:-}"
if [[ -z "$cmd" || -z "$state" ]]; then
  echo "usage: $0 start|stop|restart STATE_DIR" >&2
  exit 2
fi

as_postgres() {
  if [[ "$(id -u)" -eq 0 ]]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

pg_bin() {
  local bin
  bin="$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
  if [[ ! -x "$bin/initdb" ]]; then
    echo "pg_test_cluster: initdb not found under /usr/lib/postgresql (scripts/deps.sh installs" \
         "the postgresql package)" >&2
    exit 1
  fi
  echo "$bin"
}

case "$cmd" in
  start)
    mkdir -p "$state"
    rm -f "$state/url" "$state/cluster"
    if [[ -n "${MQLITE_TEST_PG_URL:-}" ]]; then
      echo "pg_test_cluster: using the server at MQLITE_TEST_PG_URL"
      printf '%s\n' "$MQLITE_TEST_PG_URL" >"$state/url"
      exit 0
    fi
    bin="$(pg_bin)"
    dir="$(mktemp -d /tmp/mqlite-pg.XXXXXX)"
    echo "$dir" >"$state/cluster"
    if [[ "$(id -u)" -eq 0 ]]; then chown postgres:postgres "$dir"; fi
    if ! as_postgres "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync \
        >"$dir/initdb.log" 2>&1; then
      cat "$dir/initdb.log" >&2
      exit 1
    fi
    fsync="-c fsync=off"
    if [[ "${MQLITE_PG_DURABLE:-0}" == 1 ]]; then fsync=""; fi
    port=$((20000 + RANDOM % 30000))
    for attempt in 1 2 3 4 5 6 7 8; do
      if as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
          -o "-c listen_addresses=127.0.0.1 -p $port -k $dir $fsync" start >/dev/null; then
        url="host=127.0.0.1 port=$port user=postgres dbname=postgres"
        printf '%s\n' "$url" >"$state/url"
        echo "pg_test_cluster: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') up" \
             "in $dir, $url"
        exit 0
      fi
      echo "pg_test_cluster: port $port did not work (attempt $attempt); trying another" >&2
      port=$((port + 1 + RANDOM % 100))
    done
    cat "$dir/server.log" >&2
    exit 1
    ;;
  stop)
    if [[ -f "$state/cluster" ]]; then
      dir="$(cat "$state/cluster")"
      bin="$(pg_bin)"
      as_postgres "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
      rm -rf "$dir"
      rm -f "$state/cluster"
      echo "pg_test_cluster: stopped and removed $dir"
    fi
    rm -f "$state/url"
    ;;
  restart)
    # An immediate shutdown (what a crash looks like to clients: sessions cut,
    # no checkpoint) and a start with the same options; for the store's
    # server-restart test, on a cluster of its own.
    if [[ ! -f "$state/cluster" ]]; then
      echo "pg_test_cluster: no cluster of ours in $state to restart" >&2
      exit 1
    fi
    dir="$(cat "$state/cluster")"
    bin="$(pg_bin)"
    as_postgres "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m immediate -w -t 60 \
      restart >/dev/null
    echo "pg_test_cluster: restarted $dir"
    ;;
  *)
    echo "usage: $0 start|stop|restart STATE_DIR" >&2
    exit 2
    ;;
esac
