#!/usr/bin/env bash
# Each public header compiles on its own as strict C99 (and as C++), so every header is self-contained.
set -euo pipefail
cc="$1" cxx="$2" include="$3"
for h in "$include"/dptrain/*.h; do
  name="dptrain/$(basename "$h")"
  printf '#include <%s>\nint dpt_header_check;\n' "$name" | "$cc" -std=c99 -Wall -Wextra -pedantic -Werror \
    -I"$include" -x c -fsyntax-only -
  printf '#include <%s>\n' "$name" | "$cxx" -std=c++11 -Wall -Wextra -pedantic -Werror -I"$include" -x c++ \
    -fsyntax-only -
  echo "ok: $name"
done
