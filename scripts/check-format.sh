#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails when a C or C++ file of ours differs from what .clang-format (clang-format-15) makes of it.
# `scripts/check-format.sh --fix` rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-15 || true)
[ -n "$cf" ] || { echo "check-format: clang-format-15 is missing (scripts/install-deps.sh)" >&2; exit 1; }
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  'sdk/*' 'kernel/*' 'plugins/*' 'hosts/*' 'examples/*' 'tests/*' | grep -E '\.(h|hpp|c|cc)$' |
  grep -v -E '^tests/sdk/compat/[^/]+/include/' || true)  # frozen releases stay byte for byte
[ ${#files[@]} -gt 0 ] || exit 0
if [ "${1:-}" = "--fix" ]; then
  "$cf" -i "${files[@]}"
  exit 0
fi
if ! "$cf" --dry-run --Werror "${files[@]}" 2>/tmp/molt-format.$$; then
  grep -E '^[^ ]+:[0-9]+:[0-9]+: ' /tmp/molt-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /'
  rm -f /tmp/molt-format.$$
  echo "check-format: run scripts/check-format.sh --fix" >&2
  exit 1
fi
rm -f /tmp/molt-format.$$
echo "check-format: ${#files[@]} files formatted"
