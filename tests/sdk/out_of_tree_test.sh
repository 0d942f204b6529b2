#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs Molt from the build tree into a temporary prefix, builds the out-of-tree example plugin
# against it with find_package(Molt), checks it exports only its entry symbol, and runs it in moltd.
# Usage: out_of_tree_test.sh <molt build dir> <example source dir> <moltd>
set -euo pipefail
build="$1"; example="$2"; moltd="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/molt/molt.h"
test -f "$work/prefix/lib/cmake/Molt/MoltConfig.cmake" || test -f "$work/prefix/lib/x86_64-linux-gnu/cmake/Molt/MoltConfig.cmake"

cmake -S "$example" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
so="$work/build/hello.so"
test -f "$so"

exports=$(nm -D --defined-only "$so" | awk '{print $3}')
if [ "$exports" != "molt_plugin_entry" ]; then
  echo "hello.so exports more than its entry: $exports" >&2
  exit 1
fi

mkdir "$work/plugins"
cp "$so" "$work/plugins/"
"$moltd" -p "$work/plugins" -d "$work/data" --port 0 >"$work/out.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q "Server booted 1 services" "$work/out.log" && break
  sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
grep -q '\[hello\] hello from out of tree' "$work/out.log"
grep -q '\[hello\] goodbye after' "$work/out.log"
echo "out-of-tree plugin built against the installed package and ran in moltd"
