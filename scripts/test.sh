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
if ! ctest --preset "$preset"; then
  # A CI log is read from its end: the failed tests' own output again, last (80 lines each).
  temp="build/$preset/Testing/Temporary"
  head -n 5 "$temp/LastTestsFailed.log" | while IFS=: read -r _ name; do
    echo "==== $name: the end of its output ===="
    awk -v name="$name" '
      /^[0-9]+\/[0-9]+ Test: / { on = (substr($0, index($0, "Test: ") + 6) == name) }
      on { print }
      on && /^<end of output>/ { exit }' "$temp/LastTest.log" | tail -n 80
  done
  exit 1
fi
