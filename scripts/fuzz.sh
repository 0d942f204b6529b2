#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs the libFuzzer target of the network's inbound pipeline (tests/fuzz/net_fuzz.cc)
# in its own build directory, build/fuzz: clang, -fsanitize=fuzzer,address,undefined, the kernel
# instrumented for coverage. Only molt_net_fuzz is built.
#
#   scripts/fuzz.sh                 # fuzz for 60 s from the seed corpus
#   scripts/fuzz.sh 600 -jobs=2     # 600 s; arguments after the seconds go to libFuzzer
#   scripts/fuzz.sh --regress       # replay every seed once and exit (ctest runs the same)
#
# The seeds (tests/fuzz/corpus/net, made by tests/fuzz/make_corpus.py) are only read; inputs the
# fuzzer finds go to build/fuzz/corpus/net, crashes to build/fuzz/artifacts/. Reproduce a crash
# with `build/fuzz/tests/fuzz/molt_net_fuzz <file>`.
source "$(dirname "$0")/common.sh"

build=build/fuzz
seeds=tests/fuzz/corpus/net
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f "$build/build.ninja" ]; then
  cmake -S . -B "$build" -G Ninja "${launcher[@]}" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMOLT_BUILD_TESTS=ON -DMOLT_BUILD_FUZZERS=ON -DMOLT_SANITIZE=ON >/dev/null
fi
ninja -C "$build" -j2 molt_net_fuzz
fuzzer="$build/tests/fuzz/molt_net_fuzz"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

if [ "${1:-}" = "--regress" ]; then
  exec "$fuzzer" -runs=0 "$seeds"
fi
seconds="${1:-60}"
shift || true
mkdir -p "$build/corpus/net" "$build/artifacts"
exec "$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$build/artifacts/" "$@" "$build/corpus/net" "$seeds"
