#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's run command as a newcomer runs it: scripts/run.sh, with the moltd this build made
# (MOLT_RUN_MOLTD: nothing installed or built) on free ports. It must serve the bundled plugins on
# the development branch dev with dev rules, watch the plugin directory (the tour rebuilds
# counter.so), and boot clean: a quickstart whose boot warns (it warned "prod rules and no trusted
# keys") teaches to ignore warnings. --branch prod, the operator's choice, still takes prod rules.
# Usage: run_test.sh <moltd> <molt> <molt source dir>
set -euo pipefail
moltd="$1"; molt="$2"; src="$3"
work="$(mktemp -d)"
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { cat "$work/run.log" >&2; echo "run_test: $*" >&2; exit 1; }

# Starts scripts/run.sh on free ports with `args`; waits until it serves (10 s at most).
serve() {
  rm -rf "$work/data"
  MOLT_RUN_MOLTD="$moltd" MOLT_EXAMPLE_PORT=0 bash "$src/scripts/run.sh" --port 0 \
    --admin 127.0.0.1:0 --ws 127.0.0.1:0 -d "$work/data" "$@" >"$work/run.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do
    grep -q "SIGTERM or SIGINT closes" "$work/run.log" && return
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  fail "it did not serve"
}
# `molt branches --json` of the server serving: its branch and rules.
branches() {
  local admin
  admin=$(sed -n 's#.*admin endpoint on \(http://127\.0\.0\.1:[0-9]*\)/.*#\1#p' "$work/run.log")
  "$molt" branches --server "$admin" --data "$work/data" --json || fail "molt branches failed"
}
# SIGTERM; the exit code must be 0.
stop() {
  kill -TERM "$pid"
  wait "$pid" || fail "it did not close cleanly"
  pid=""
}

serve
grep -q "serving 6 plugins from " "$work/run.log" || fail "it serves no bundled plugins"
grep -q "watching .*: a rebuilt plugin is swapped in live" "$work/run.log" ||
  fail "it does not watch the plugin directory"
grep -q '"branch":"dev","rules":"dev"' <<<"$(branches)" || fail "it does not serve the branch dev on dev rules"
stop
# Log lines are "<date> <time> <level> [<scope>] ...": no warning and no error at all.
if grep -E '^[0-9-]+ [0-9:.]+ (warn|error|critical) ' "$work/run.log" >&2; then
  fail "the quickstart's boot warned (above)"
fi

serve --branch prod
grep -q '"branch":"prod","rules":"prod"' <<<"$(branches)" || fail "--branch prod does not take prod rules"
stop
grep -q "warn  \[Deploys\] this server has prod rules and no trusted keys" "$work/run.log" ||
  fail "--branch prod without keys did not warn"
echo "scripts/run.sh: the bundled plugins on the branch dev, watched, with no warning; --branch prod takes prod rules"
