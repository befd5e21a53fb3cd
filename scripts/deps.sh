#!/usr/bin/env bash
# Installs the Debian 12 packages mqlite builds, tests and benchmarks with.
#
# Idempotent: checks each package with dpkg-query and touches apt only when
# something is missing (then `apt-get update` once and installs just the
# missing ones). As a non-root user it succeeds only if nothing is missing;
# otherwise it prints the command to run as root and exits 1.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config  # toolchain
  libsqlite3-dev sqlite3                         # SQLite store
  libgtest-dev libgmock-dev googletest           # tests, TCK
  libbenchmark-dev                               # bench/
  libfmt-dev
  nlohmann-json3-dev                             # mqlite/json_codec.h: tests, examples
  liblmdb-dev                                    # LMDB store
  libpq-dev postgresql                           # PostgreSQL store and its test cluster
)

missing=()
for p in "${packages[@]}"; do
  status="$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)"
  if [[ "$status" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "deps: missing: ${missing[*]}"
if [[ "$(id -u)" -ne 0 ]]; then
  echo "deps: not root; as root run:" >&2
  echo "  apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "deps: installed ${missing[*]}"
