#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The TypeScript client's suite, as ctest runs it (tests/CMakeLists.txt): installs the locked npm
# packages into the repository's cache (.cache/npm), generates the wire types with flatc --ts,
# builds with tsc, then runs Node's test runner against a real moltd, Chromium included.
#   sdk/ts/scripts/test.sh MOLTD PLUGIN_DIR CHROMIUM
set -euo pipefail
cd "$(dirname "$0")/.."
export MOLTD="$1" MOLT_PLUGINS="$2" MOLT_CHROMIUM="$3"
npm ci --cache ../../.cache/npm --prefer-offline --no-audit --no-fund --loglevel=error
npm run --silent build
npm test
