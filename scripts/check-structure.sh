#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The structure check (scripts/test.sh runs it; docs/architecture.md, "The rules the check
# keeps"): the tree stays cut by object, not by file. It fails, printing each break as a compiler
# would (path:line: error: what, and the fix), on
#   - a production file (kernel/src, hosts/, plugins/) over 800 lines;
#   - a .cc in kernel/src with no header of the same stem, unless docs/architecture.md lists it
#     (with its reason) among the sources without a header;
#   - an #include "kernel/src/D/..." from a directory that docs/architecture.md's room table does
#     not allow to include D (the public headers, the plugins and the examples may include none);
#   - files of one directory that include each other in a circle (stem to stem: a part that
#     includes its owner's header to reach into the owner).
# `scripts/check-structure.sh [ROOT]` checks the tree at ROOT (default: this repository).
set -euo pipefail
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root"
doc=docs/architecture.md
readonly max_lines=800
[ -f "$doc" ] || { echo "check-structure: $doc is missing" >&2; exit 2; }

# The files checked: tracked and new ones in a repository, every file elsewhere.
list_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- "$@"
  else
    find "$@" -type f 2>/dev/null | sort
  fi
}
mapfile -t files < <(list_files kernel/src kernel/include sdk/include hosts plugins examples |
  grep -E '\.(h|hpp|c|cc)$' | while read -r f; do [ -f "$f" ] && echo "$f"; done)

errors=0
report() {  # path line message
  echo "$1:$2: error: $3"
  errors=$((errors + 1))
}

# The lines of the doc between `<!-- NAME: begin -->` and `<!-- NAME: end -->`.
doc_block() {
  awk -v name="$1" '$0 ~ "<!-- " name ": end -->" { on = 0 } on { print }
                    $0 ~ "<!-- " name ": begin -->" { on = 1 }' "$doc"
}

# 1. Sizes.
for f in "${files[@]}"; do
  case "$f" in kernel/src/* | hosts/* | plugins/*) ;; *) continue ;; esac
  n=$(wc -l <"$f")
  if [ "$n" -gt "$max_lines" ]; then
    report "$f" $((max_lines + 1)) "$n lines: a production file holds at most $max_lines; split it by object, a class to a header and its source (STYLE.md §12)"
  fi
done

# 2. A header for every source of kernel/src.
declare -A unpaired=()
while IFS= read -r f; do
  unpaired["$f"]=1
done < <(doc_block sources-without-header | sed -nE 's/^\| *`([^`]+)` *\|.*/kernel\/src\/\1/p')
for f in "${files[@]}"; do
  case "$f" in kernel/src/*.cc) ;; *) continue ;; esac
  if [ ! -f "${f%.cc}.h" ] && [ -z "${unpaired[$f]:-}" ]; then
    report "$f" 1 "no header ${f%.cc}.h: a source holds the methods of the class its own header declares; give this one's class a header, or list the file with its reason in $doc (sources without a header)"
  fi
done

# 3. The room order: which directory may include which.
declare -A allowed=()
while IFS='|' read -r _ dir includes _; do
  dir=$(echo "$dir" | tr -d ' `')
  [ -n "$dir" ] || continue
  allowed["$dir"]=" $(echo "$includes" | tr ',' ' ' | tr -s ' ') "
done < <(doc_block rooms | grep -E '^\| *`')
[ ${#allowed[@]} -gt 0 ] || { echo "$doc:1: error: no room table between <!-- rooms: begin --> and <!-- rooms: end -->"; exit 1; }
room_of() {  # the room table's name for a file's directory
  case "$1" in
    kernel/src/*) local r=${1#kernel/src/}; echo "${r%%/*}" ;;
    kernel/include/*) echo "kernel/include" ;;
    sdk/include/*) echo "sdk/include" ;;
    hosts/*) echo "hosts" ;;
    plugins/*) echo "plugins" ;;
    examples/*) echo "examples" ;;
  esac
}
declare -A edges=()  # "dir/stem dir/stem2" for the circle check
for f in "${files[@]}"; do
  room=$(room_of "$f")
  if [ -z "${allowed[$room]+set}" ]; then
    report "$f" 1 "directory \"$room\" is not in the room table of $doc: add its row (what it may include, and why)"
    continue
  fi
  while IFS=: read -r line target; do
    to=${target#kernel/src/}
    to=${to%%/*}
    if [[ "${allowed[$room]}" != *" $to "* ]]; then
      rooms=$(echo ${allowed[$room]} | sed 's/ /, /g')
      [ "$rooms" != none ] && may="only $rooms" || may="nothing of kernel/src"
      report "$f" "$line" "\"$room\" may not include $target: the room table of $doc lets it include $may; move the code to the room that owns it, or pass what it needs from above"
    fi
    if [[ "$f" == kernel/src/* && "$to" == "$room" ]]; then
      from_unit=${f%.*}
      to_unit=${target%.*}
      [ "$from_unit" = "$to_unit" ] || edges["$from_unit $to_unit"]="$f:$line"
    fi
  done < <(grep -nE '^#include "kernel/src/[^"]+"' "$f" | sed -E 's/^([0-9]+):#include "([^"]+)".*/\1:\2/')
done

# 4. No circle inside a directory: the files of a room stand in layers.
if [ ${#edges[@]} -gt 0 ]; then
  while IFS= read -r circle; do
    first=${circle%% *}
    next=$(echo "$circle" | cut -d' ' -f2)
    at=${edges["$first $next"]}
    report "${at%%:*}" "${at##*:}" "a circle of includes: $(echo "$circle" | sed 's/ / -> /g'); the part must not reach back into the file that includes it: give it a small interface of its own, or pass it what it needs (STYLE.md §11, 14)"
  done < <(for e in "${!edges[@]}"; do echo "$e"; done | sort | awk '
    function add(n) { if (!(n in node)) { node[n] = 1; order[++count] = n } }
    { succ[$1] = succ[$1] " " $2; add($1); add($2) }
    function visit(n,    i, k, parts, m) {
      color[n] = 1; path[++depth] = n
      m = split(succ[n], parts, " ")
      for (i = 1; i <= m; i++) {
        if (color[parts[i]] == 1) {
          line = ""
          for (k = 1; k <= depth; k++) if (path[k] == parts[i]) break
          for (; k <= depth; k++) line = line path[k] " "
          print line parts[i]
        } else if (color[parts[i]] == 0) {
          visit(parts[i])
        }
      }
      color[n] = 2; depth--
    }
    END { for (i = 1; i <= count; i++) if (color[order[i]] == 0) visit(order[i]) }')
fi

if [ "$errors" -gt 0 ]; then
  echo "check-structure: $errors error(s); the rules: $doc, \"The rules the check keeps\"" >&2
  exit 1
fi
echo "check-structure: ${#files[@]} files: none over $max_lines lines, every source paired, includes in room order, no circle"
