#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs what is missing, builds the default preset (RelWithDebInfo)
# with every test, runs them all, and checks formatting and the tree's structure
# (scripts/check-structure.sh). `scripts/test.sh asan` does the same with
# AddressSanitizer and UndefinedBehaviorSanitizer.
source "$(dirname "$0")/common.sh"
preset="${1:-default}"
molt_build "$preset"
# The checks take seconds and the tests minutes: a misplaced include fails here, not after them.
bash scripts/check-format.sh
bash scripts/check-structure.sh
ctest --preset "$preset"
