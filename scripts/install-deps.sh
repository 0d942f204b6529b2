#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages Molt needs to build and test (DESIGN.md §10), only when some are
# missing. Safe to run repeatedly; used by scripts/run.sh, scripts/test.sh and .ci/run.
set -euo pipefail

packages=(
  g++ cmake ninja-build
  libboost1.81-dev libboost-context1.81-dev libboost-json1.81-dev
  libsqlite3-dev sqlite3 libpq-dev postgresql-15 libspdlog-dev libcxxopts-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libflatbuffers-dev flatbuffers-compiler libssl-dev openssl libenet-dev
  clang libclang-rt-14-dev clang-format-15 pkg-config
  chromium-headless-shell
)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
missing=()
# The TypeScript client (sdk/ts) builds and tests with Node and npm: Debian's, unless the machine
# already has a Node.js of its own (e.g. NodeSource's, which bundles npm).
if ! command -v node >/dev/null; then
  packages+=(nodejs)
fi
if ! command -v npm >/dev/null; then
  packages+=(npm)
fi
for p in "${packages[@]}"; do
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != *"install ok installed"* ]]; then
    missing+=("$p")
  fi
done
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

if [ ${#missing[@]} -ne 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  # PostgreSQL's server binaries are for the tests, which start their own (a temporary directory,
  # a Unix socket): no cluster of the system's is made or started by the install.
  if [[ " ${missing[*]} " == *" postgresql-15 "* ]] && [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    $sudo mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.conf >/dev/null
  fi
  if [ -n "$sudo" ] && ! command -v sudo >/dev/null; then
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends -o Dpkg::Options::=--force-confold "${missing[@]}"
fi

# promtool checks /metrics in the tests (docs/operations.md). It comes from Debian's prometheus
# package, unpacked into .cache/ rather than installed: installing it would also set up and start
# a Prometheus server. No root needed; the package lists must be there (apt-get update above).
promtool="$root/.cache/promtool/usr/bin/promtool"
if [ ! -x "$promtool" ]; then
  echo "install-deps: unpacking promtool from Debian's prometheus package into .cache/promtool"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  if ! (cd "$work" && apt-get download -qq prometheus 2>/dev/null); then
    $sudo apt-get update -qq
    (cd "$work" && apt-get download -qq prometheus)
  fi
  mkdir -p "$root/.cache/promtool"
  dpkg-deb --fsys-tarfile "$work"/prometheus_*.deb | tar -x -C "$root/.cache/promtool" ./usr/bin/promtool
fi
