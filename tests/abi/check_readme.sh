#!/usr/bin/env bash
# README's C quick start compiles as strict C99 against the public header (so the README cannot rot).
set -euo pipefail
cc="$1" source="$2"
code=$(awk '/^## Quick start in C/ {s=1} s && /^```c$/ {c=1; next} c && /^```$/ {exit} c {print}' "$source/README.md")
[ -n "$code" ] || { echo "no C block under '## Quick start in C' in README.md"; exit 1; }
lines=$(printf '%s\n' "$code" | wc -l)
printf '%s\n' "$code" | "$cc" -std=c99 -Wall -Wextra -pedantic -Werror -I"$source/capi/include" -x c -fsyntax-only -
echo "README quick start: $lines lines, compiles"
