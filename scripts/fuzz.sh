#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the libFuzzer targets in their own build directory, build/fuzz: clang,
# -fsanitize=fuzzer,address,undefined, the code under test instrumented for coverage.
#   net     the server's inbound pipeline (tests/fuzz/net_fuzz.cc): what a hostile client sends
#   ws      the WebSocket layer in front of it (tests/fuzz/ws_fuzz.cc): upgrades and RFC 6455 frames
#   client  libmolt_client's frame parser (tests/fuzz/client_fuzz.cc): what a hostile server sends
#   datagram  the datagram link's seal (tests/fuzz/datagram_fuzz.cc): what reaches the UDP port
#
#   scripts/fuzz.sh                   # fuzz the net target for 60 s from its seed corpus
#   scripts/fuzz.sh client 600 -jobs=2  # the client target, 600 s; then libFuzzer's arguments
#   scripts/fuzz.sh --regress         # replay every seed of each once and exit (ctest does too)
#
# The seeds (tests/fuzz/corpus/<target>, made by tests/fuzz/make_corpus.py) are only read; inputs
# the fuzzer finds go to build/fuzz/corpus/<target>, crashes to build/fuzz/artifacts/. Reproduce a
# crash with `build/fuzz/tests/fuzz/molt_<target>_fuzz <file>`.
source "$(dirname "$0")/common.sh"

build=build/fuzz
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja "${launcher[@]}" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMOLT_BUILD_TESTS=ON -DMOLT_BUILD_FUZZERS=ON -DMOLT_SANITIZE=ON >/dev/null
fi
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if [ "${1:-}" = "--regress" ]; then
  ninja -C "$build" -j2 molt_net_fuzz molt_ws_fuzz molt_client_fuzz molt_datagram_fuzz
  for target in net ws client datagram; do
    "$build/tests/fuzz/molt_${target}_fuzz" -runs=0 "tests/fuzz/corpus/$target"
  done
  exit 0
fi
target=net
case "${1:-}" in
  net | ws | client | datagram) target="$1"; shift ;;
esac
seconds="${1:-60}"
shift || true
ninja -C "$build" -j2 "molt_${target}_fuzz"
mkdir -p "$build/corpus/$target" "$build/artifacts"
exec "$build/tests/fuzz/molt_${target}_fuzz" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$@" "$build/corpus/$target" \
  "tests/fuzz/corpus/$target"
