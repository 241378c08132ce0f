#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds the C quick start against it twice: through
# find_package(dptrain) and through pkg-config. Runs the first and checks the accuracy it prints. Runs the
# installed CLI from that prefix, which is not on the library path, with LD_LIBRARY_PATH unset. Checks that
# the CUDA module and the HTML API reference are installed when the build has them.
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$source/tests/install" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DQUICKSTART_SOURCE="$source/samples/c/quickstart.c" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
libdir=$(dirname "$(find "$tmp/prefix" -name 'libdptrain.so.0' | head -n 1)")
PKG_CONFIG_PATH="$libdir/pkgconfig" cc -std=c99 -Wall -Wextra -Werror "$source/samples/c/quickstart.c" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs dptrain) -o "$tmp/quickstart-pc"
out=$(LD_LIBRARY_PATH="$libdir" DPTRAIN_CPU_DEVICES=2 "$tmp/consumer/quickstart")
echo "$out"
acc=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\) after 1 epoch(s)$/\1/p')
python3 -c "import sys; a=float('$acc'); sys.exit(0 if a >= 0.70 else 1)" || { echo "accuracy '$acc' below 0.70"; exit 1; }

# The installed CLI finds the installed libdptrain by itself (RUNPATH $ORIGIN/../lib).
cli=$(find "$tmp/prefix" -path '*/bin/dptrain' | head -n 1)
if [ -n "$cli" ]; then
  out=$(env -u LD_LIBRARY_PATH DPTRAIN_CPU_DEVICES=2 "$cli" devices --json) || { echo "$out"; exit 1; }
  devices=$(echo "$out" | python3 -c "import json, sys; print(' '.join(d['name'] for d in json.load(sys.stdin)['devices']))")
  [ "$devices" = "cpu:0 cpu:1" ] || { echo "installed 'dptrain devices' listed '$devices': $out"; exit 1; }
  echo "installed CLI without LD_LIBRARY_PATH: $devices"
fi

# The CUDA module, when this build has one, is installed next to libdptrain.so, and the installed library
# finds it there (the installed CLI reports the module's path, or why it could not load it).
if [ -e "$build/lib/libdptrain_cuda.so" ]; then
  [ -e "$libdir/libdptrain_cuda.so" ] || { echo "libdptrain_cuda.so is not installed next to libdptrain.so"; exit 1; }
  cli=$(find "$tmp/prefix" -path '*/bin/dptrain' | head -n 1)
  if [ -n "$cli" ]; then
    out=$(env -u DPTRAIN_BACKEND_PATH LD_LIBRARY_PATH="$libdir" DPTRAIN_CPU_DEVICES=1 "$cli" devices --json)
    module=$(echo "$out" | python3 -c "import json, sys; print(json.load(sys.stdin)['cuda']['module'])")
    [ "$module" = "$libdir/libdptrain_cuda.so" ] ||
      { echo "the installed library did not load the installed module: $out"; exit 1; }
    echo "installed CUDA module found next to libdptrain.so: $module"
  fi
fi

# The API reference (built when Doxygen is there) is installed as HTML.
if [ -e "$build/docs/api/html/index.html" ]; then
  cmp -s "$build/docs/api/html/index.html" "$tmp/prefix/share/doc/dptrain/html/index.html" ||
    { echo "the API reference is not installed under share/doc/dptrain/html"; exit 1; }
  echo "API reference installed: share/doc/dptrain/html/index.html"
fi
