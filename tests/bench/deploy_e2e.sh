#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Deploys end to end, as docs/benchmarks.md ("Deploys") measures them: packs two plugin sets with
# `molt build`, starts `moltd --branch dev` on a scratch data directory, runs six `molt deploy
# --wait 60 --json` alternating the two builds (so each one swaps), and prints each deploy's wall
# time with the swap report's load_ms, staged_ms, init_ms and hold_ms.
#
#   tests/bench/deploy_e2e.sh DIR_A DIR_B [BUILD_DIR]   (BUILD_DIR: build/default)
#
# Two sets that differ: e.g. the bundled plugins and a copy with one byte appended to a library.
set -euo pipefail
a=${1:?usage: deploy_e2e.sh DIR_A DIR_B [BUILD_DIR]}
b=${2:?usage: deploy_e2e.sh DIR_A DIR_B [BUILD_DIR]}
bin=${3:-build/default}/bin
work=$(mktemp -d)
trap 'kill -INT "${server:-0}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$bin/molt" build "$a" --out "$work/a.molt" --branch dev --channel dev >/dev/null
"$bin/molt" build "$b" --out "$work/b.molt" --branch dev --channel dev >/dev/null
"$bin/moltd" --data "$work/data" --branch dev --port 0 --admin 127.0.0.1:0 >"$work/log" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "serving" "$work/log" && break
  sleep 0.1
done
admin=$(grep -o 'admin endpoint on http://127.0.0.1:[0-9]*' "$work/log" | grep -o 'http.*')
for i in 1 2 3 4 5 6; do
  file=$work/a.molt
  [ $((i % 2)) = 0 ] && file=$work/b.molt
  start=$(date +%s.%N)
  "$bin/molt" deploy "$file" --branch dev --wait 60 --json --server "$admin" --data "$work/data" \
    >"$work/out.json" || true
  end=$(date +%s.%N)
  python3 - "$work/out.json" "$start" "$end" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d.get("report") or {}
r = json.loads(r) if isinstance(r, str) else r
print("deploy %.0f ms  %-8s load_ms %-8s staged_ms %-8s init_ms %-7s hold_ms %s" % (
    (float(sys.argv[3]) - float(sys.argv[2])) * 1000, d.get("result"), r.get("load_ms"),
    r.get("staged_ms"), r.get("init_ms"), r.get("hold_ms")))
PY
done
