#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The installed package, used as a third party uses it. Installs Molt from the build tree into a
# fresh prefix, then, with nothing but that prefix (the examples and docs it carries included):
#   - builds the installed examples (share/molt/examples) with their own CMakeLists.txt: the C++
#     hello plugin (g++, its channel schema compiled by molt_plugin_schemas), the C hello_c
#     plugin, the C client app hello_client and a custom server host on Molt::kernel; checks each
#     plugin exports only its entry;
#   - runs both plugins' own tests, built with molt_add_plugin_test() on the installed test kit
#     (Molt::testkit: hello's in C++ with GoogleTest, hello_c's in C99);
#   - builds the installed hello_c (and runs its test) and hello_client alone with clang, the app
#     once with find_package(Molt) (Molt::client) and once with pkg-config (molt-client.pc);
#   - runs the installed moltd (bundled plugins found from its own location, no
#     LD_LIBRARY_PATH) and the custom host, each serving the out-of-tree plugins, and has the
#     client app exchange messages with them; the installed molt-bot asks hello's request channel.
# Usage: out_of_tree_test.sh <molt build dir>
set -euo pipefail
build="$1"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
# Output is matched from a here-string, never `cmd | grep -q`: under pipefail grep -q leaving at
# its first match makes a writer still writing die of SIGPIPE, and the pipeline fail.
fail() { echo "out_of_tree_test: $*" >&2; exit 1; }
unset LD_LIBRARY_PATH

prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(cd "$prefix" && dirname "$(find . -name libmolt_client.so -printf '%P\n' | head -1)")
for f in include/molt/molt.h include/molt/molt.hpp include/molt/client.h \
         include/molt/testkit.h include/molt/testkit.hpp "$libdir/libmolt_testkit.so" \
         include/molt/kernel/server.h "$libdir/cmake/Molt/MoltConfig.cmake" \
         "$libdir/pkgconfig/molt.pc" "$libdir/pkgconfig/molt-client.pc" \
         "$libdir/libmolt_kernel.a" bin/moltd bin/molt-bot "$libdir/molt/plugins/scores.so" \
         share/molt/examples/CMakeLists.txt share/molt/examples/README.md \
         share/molt/examples/hello_c/hello_c_plugin.c share/doc/molt/sdk.md \
         share/doc/molt/testing-plugins.md share/doc/molt/README.md; do
  test -e "$prefix/$f" || fail "the install has no $f"
done
soname=$(readelf -d "$prefix/$libdir/libmolt_client.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libmolt_client.so.0" ] || fail "libmolt_client's SONAME is '$soname'"
test -e "$prefix/$libdir/$soname" || fail "the install has no $soname"
grep -q 'R.*PATH.*\$ORIGIN' <<<"$(readelf -d "$prefix/bin/molt-bot")" || fail "molt-bot has no \$ORIGIN RPATH"

configure() {  # configure <source> <build> [cmake args...]
  local s="$1" b="$2"
  shift 2
  cmake -S "$s" -B "$b" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" "$@" >"$b.log" 2>&1 &&
    cmake --build "$b" >>"$b.log" 2>&1 || { cat "$b.log" >&2; fail "building $s failed"; }
}
only_entry() {
  local exports
  exports=$(nm -D --defined-only "$1" | awk '{print $3}')
  [ "$exports" = "molt_plugin_entry" ] || fail "$1 exports more than its entry: $exports"
}

examples="$prefix/share/molt/examples"
mkdir "$work/plugins"
configure "$examples" "$work/examples"
configure "$examples/hello_c" "$work/hello_c" -DCMAKE_C_COMPILER=clang
grep -q 'clang' "$work/hello_c/CMakeCache.txt" || fail "hello_c was not built by clang"
for so in "$work/examples/hello/hello.so" "$work/examples/hello_c/hello_c.so" \
          "$work/hello_c/hello_c.so"; do
  only_entry "$so"
done
cp "$work/examples/hello/hello.so" "$work/hello_c/hello_c.so" "$work/plugins/"
# The plugins' own tests, on the installed test kit: both in the examples' build, hello_c's
# again as clang built it.
tests() {  # tests <build dir> <how many>
  ctest --test-dir "$1" --output-on-failure >"$1-test.log" 2>&1 ||
    { cat "$1-test.log" >&2; fail "the tests of $1 failed"; }
  grep -q "100% tests passed, 0 tests failed out of $2\$" "$1-test.log" ||
    { cat "$1-test.log" >&2; fail "the tests of $1 did not all run"; }
}
tests "$work/examples" 2
tests "$work/hello_c" 1

configure "$examples/hello_client" "$work/client" -DCMAKE_C_COMPILER=clang
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
# shellcheck disable=SC2046
clang -std=c99 -pedantic -Wall -Werror "$examples/hello_client/hello_client.c" \
  $(pkg-config --cflags --libs molt-client) -Wl,-rpath,"$prefix/$libdir" \
  -o "$work/hello_client_pc" || fail "hello_client does not build with pkg-config"
test -x "$work/examples/custom_host/custom_host" || fail "the examples built no custom_host"

# Waits until the server of `log` serves (10 s at most; it listens first, refusing clients
# until its plugins started); prints the port it logged.
port_of() {
  local log="$1"
  for _ in $(seq 1 100); do
    if grep -q "SIGTERM or SIGINT closes" "$log"; then
      sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -1
      return
    fi
    sleep 0.1
  done
  cat "$log" >&2
  fail "the server did not start"
}
stop() {  # stop <pid> <log>: SIGTERM, then the exit code must be 0
  kill -TERM "$1"
  wait "$1" || { cat "$2" >&2; fail "the server did not close cleanly"; }
}

# The installed moltd, serving the out-of-tree plugins; the app talks to hello_c.
"$prefix/bin/moltd" -p "$work/plugins" -d "$work/data" --port 0 --admin 127.0.0.1:0 >"$work/moltd.log" 2>&1 &
pids+=($!)
port=$(port_of "$work/moltd.log")
for app in "$work/client/hello_client" "$work/hello_client_pc" "$work/examples/hello_client/hello_client"; do
  out=$("$app" 127.0.0.1 "$port" ada "good morning") || fail "$app: $out"
  grep -qx "heard: ada: good morning" <<<"$out" || fail "$app heard: $out"
  grep -qx "shouted: GOOD MORNING" <<<"$out" || fail "$app shouted: $out"
done
# The installed molt-bot asks hello's typed request channel (its schema compiled out of tree by
# molt_plugin_schemas); an empty table is a valid hello.Greet.
"$prefix/bin/molt-bot" --port "$port" --clients 2 --duration 1 --rate 3 --request hello.Greet \
  >"$work/bot.log" 2>&1 || { cat "$work/bot.log" >&2; fail "the installed molt-bot failed"; }
grep -Eq 'done: 2/2 connected .* requests [1-9][0-9]* ok 0 rejected 0 limited 0 timed out' \
  "$work/bot.log" || { cat "$work/bot.log" >&2; fail "hello.Greet was not answered"; }
stop "${pids[0]}" "$work/moltd.log"
grep -q '\[hello@[^]]*\] hello from out of tree' "$work/moltd.log" || fail "hello did not start"
grep -q '\[hello@[^]]*\] goodbye after' "$work/moltd.log" || fail "hello did not stop"

# The installed moltd finds its bundled plugins from its own location.
"$prefix/bin/moltd" -d "$work/data2" --port 0 --admin 127.0.0.1:0 >"$work/bundled.log" 2>&1 &
pids+=($!)
port_of "$work/bundled.log" >/dev/null
grep -q "serving 6 plugins from $prefix/bin/../$libdir/molt/plugins" "$work/bundled.log" ||
  { cat "$work/bundled.log" >&2; fail "the installed moltd did not serve its bundled plugins"; }
stop "${pids[1]}" "$work/bundled.log"

# A custom host on Molt::kernel serves the same plugins.
"$work/examples/custom_host/custom_host" "$work/plugins" "$work/data3" 0 >"$work/host.log" 2>&1 &
pids+=($!)
port=$(port_of "$work/host.log")
out=$("$work/client/hello_client" 127.0.0.1 "$port" bob "hi") || fail "custom host: $out"
grep -qx "shouted: HI" <<<"$out" || fail "custom host shouted: $out"
stop "${pids[2]}" "$work/host.log"
echo "out of tree: the installed examples (plugins by g++ and clang, tested with the installed test kit, a client app by CMake and pkg-config, a custom host) built against the installed package, served and answered"
