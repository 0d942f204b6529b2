#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's run command: installs what is missing, builds moltd and the bundled plugins, and
# runs the server on its embedded defaults (the bundled plugins, data under ./data), with
# WebSocket clients on 127.0.0.1:7780 and the TypeScript client's counter example page served on
# http://127.0.0.1:8080/examples/counter/ (MOLT_EXAMPLE_PORT; 0 turns it off). Extra arguments go
# to moltd (see `scripts/run.sh --help`); one of them naming --ws replaces the default WebSocket
# port. Stop it with Ctrl-C (SIGINT) or SIGTERM.
source "$(dirname "$0")/common.sh"
molt_build default moltd counter scores rounds shop uptime
moltd=./build/default/bin/moltd

ws=(--ws 127.0.0.1:7780)
for a in "$@"; do
  case "$a" in
    -h | --help | --version | --check) exec "$moltd" "$@" ;;  # nothing to serve
    --ws | --ws=*) ws=() ;;
  esac
done

# The example page: the TypeScript client built from its lockfile (npm's cache in .cache/npm),
# served by a small Node server of sdk/ts that exits with moltd (exec keeps this shell's PID).
# Without Node or the npm registry the server runs alone.
example_port="${MOLT_EXAMPLE_PORT:-8080}"
if [ "$example_port" != 0 ]; then
  if (cd sdk/ts && npm ci --cache ../../.cache/npm --prefer-offline --no-audit --no-fund \
        --loglevel=error >/dev/null && npm run --silent build); then
    MOLT_SERVE_WHILE_PID=$$ node sdk/ts/examples/serve.mjs "$example_port" &
  else
    echo "run: the example page is not served: building sdk/ts failed (see above)" >&2
  fi
fi
exec "$moltd" "${ws[@]}" "$@"
