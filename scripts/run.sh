#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's run command. Until the server host (moltd) lands, it builds the kernel core and runs
# what exists: the core benchmarks.
source "$(dirname "$0")/common.sh"
molt_build default molt_core_bench
exec ./build/default/tests/bench/molt_core_bench --benchmark_min_time=0.2 "$@"
