# SPDX-License-Identifier: Apache-2.0
# Shared by the scripts: repository root, dependency check, and a configure+build of one preset.
# Sourced, not run.
set -euo pipefail
MOLT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$MOLT_ROOT"

# Configures (once) and builds `preset`; extra arguments are build targets.
molt_build() {
  local preset="$1"
  shift
  local launcher=()
  if command -v ccache >/dev/null 2>&1; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake --preset "$preset" "${launcher[@]}" >/dev/null
  if [ $# -gt 0 ]; then
    cmake --build --preset "$preset" --target "$@"
  else
    cmake --build --preset "$preset"
  fi
}

bash "$MOLT_ROOT/scripts/install-deps.sh"
