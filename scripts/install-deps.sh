#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages Molt needs to build and test (DESIGN.md §10), only when some are
# missing. Safe to run repeatedly; used by scripts/run.sh, scripts/test.sh and .ci/run.
set -euo pipefail

packages=(
  g++ cmake ninja-build
  libboost1.81-dev libboost-context1.81-dev libboost-json1.81-dev
  libsqlite3-dev sqlite3 libspdlog-dev libcxxopts-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libflatbuffers-dev flatbuffers-compiler libssl-dev openssl
  clang libclang-rt-14-dev clang-format-15 pkg-config
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
