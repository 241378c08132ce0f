#!/usr/bin/env bash
# shellcheck disable=SC2015 # "CHECK && echo ok || fail": echo does not fail, so fail runs only when CHECK does
# The Debian packages (cmake/Packaging.cmake), end to end, as root: makes them with CPack from the build tree
# into a temporary directory, checks their control fields and contents, installs them with dpkg -i, then
# builds the C quick start with pkg-config and a consumer project with find_package(dptrain) against the
# installed files and runs them without LD_LIBRARY_PATH, runs the installed CLI (its training checksum must
# equal the build tree's), and finally purges every package it installed (always, from a trap) and checks
# that nothing of them is left. Refuses to start when a dptrain package or file is on the machine already.
# Usage: check_debian_packages.sh BUILD_DIR SOURCE_DIR CPACK VERSION LIBDIR (LIBDIR: /usr/lib/<triplet>)
set -euo pipefail
build=$(realpath "$1") source=$(realpath "$2") cpack=$3 version=$4 libdir=$5
so=libdptrain.so.${version%%.*}    # the SONAME: the major version
runtime=libdptrain${version%%.*}  # the library package is named after it
packages=("$runtime" libdptrain-dev dptrain "$runtime-cuda")

if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: dpkg -i needs root"
  exit 77
fi
# The machine must be left as found: packages or stray files of ours would be replaced, then purged.
for p in "${packages[@]}"; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv "not-installed"; then
    echo "FAIL: refusing to run: package $p is on this machine already (dpkg --purge $p, then rerun)"
    exit 1
  fi
done
for f in "$libdir"/libdptrain* "$libdir/pkgconfig/dptrain.pc" "$libdir/cmake/dptrain" /usr/include/dptrain \
  /usr/bin/dptrain; do
  if [ -e "$f" ]; then
    echo "FAIL: refusing to run: $f exists already (not from a package of this test; remove it, then rerun)"
    exit 1
  fi
done

tmp=$(mktemp -d)
installed=()
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
# Always purged, also after a failure or an interruption; then nothing of them may remain.
cleanup() {
  local rc=$? left=0
  if [ ${#installed[@]} -gt 0 ]; then
    dpkg --purge "${installed[@]}" >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; left=1; }
    for p in "${installed[@]}"; do
      if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -qv "not-installed"; then
        echo "FAIL: $p is still known to dpkg after the purge"
        left=1
      fi
    done
    for f in "$libdir"/libdptrain* "$libdir/pkgconfig/dptrain.pc" "$libdir/cmake/dptrain" /usr/include/dptrain \
      /usr/bin/dptrain; do
      [ ! -e "$f" ] || { echo "FAIL: $f is left after the purge"; left=1; }
    done
    if ldconfig -p | grep -q "$so "; then
      echo "FAIL: $so is still in the ld.so cache after the purge"
      left=1
    fi
    [ "$left" -ne 0 ] && rc=1 || echo "ok: purged ${installed[*]}, nothing left"
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- Make the packages -----------------------------------------------------------------------------------
start=$SECONDS
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/debs" >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log"; echo "FAIL: cpack"; exit 1; }
echo "cpack: $((SECONDS - start)) s"
arch=$(dpkg --print-architecture)
deb() { echo "$tmp/debs/${1}_${version}_${arch}.deb"; }
expected=("$runtime" libdptrain-dev dptrain)
if [ -e "$build/lib/libdptrain_cuda.so" ]; then expected+=("$runtime-cuda"); fi
for p in "${expected[@]}"; do
  [ -f "$(deb "$p")" ] || { ls "$tmp/debs"; echo "FAIL: no $(basename "$(deb "$p")")"; exit 1; }
done
made=$(find "$tmp/debs" -maxdepth 1 -name '*.deb' | wc -l)
[ "$made" -eq ${#expected[@]} ] || fail "$made packages made, expected ${#expected[@]}: $(ls "$tmp/debs")"

# ---- Control fields --------------------------------------------------------------------------------------
field() { dpkg-deb -f "$(deb "$1")" "$2"; }
# expect_field PACKAGE FIELD REGEX
expect_field() {
  local value
  value=$(field "$1" "$2")
  if [[ "$value" =~ $3 ]]; then echo "ok: $1 $2: $value"; else fail "$1 $2 is '$value', expected /$3/"; fi
}
v=${version//./\\.}
for p in "${expected[@]}"; do
  expect_field "$p" Package "^$p\$"
  expect_field "$p" Version "^$v\$"
  expect_field "$p" Architecture "^$arch\$"
  expect_field "$p" Maintainer "^.+ <.+@.+>\$"
  expect_field "$p" Description "^.+"
done
# dpkg-shlibdeps ran: the C runtime, BLAS, zlib and (through the MPI module) Open MPI.
expect_field "$runtime" Depends "libc6 \(>= [0-9.]+\)"
expect_field "$runtime" Depends "libopenblas"
expect_field "$runtime" Depends "zlib1g"
expect_field "$runtime" Section "^libs\$"
expect_field libdptrain-dev Depends "(^|, )$runtime \(= $v\)(,|\$)"
expect_field libdptrain-dev Section "^libdevel\$"
expect_field dptrain Depends "(^|, )$runtime \(>= $v\)(,|\$)"
expect_field dptrain Depends "libc6"
if [ ${#expected[@]} -eq 4 ]; then
  expect_field "$runtime-cuda" Depends "(^|, )$runtime \(= $v\)(,|\$)"
  expect_field "$runtime" Suggests "^$runtime-cuda\$"
fi
# The library package declares its SONAME for other packages' dpkg-shlibdeps, and runs ldconfig.
dpkg-deb --ctrl-tarfile "$(deb "$runtime")" | tar -xO ./shlibs >"$tmp/shlibs" 2>/dev/null || true
grep -qx "libdptrain ${version%%.*} $runtime (>= $version)" "$tmp/shlibs" &&
  echo "ok: shlibs: $(cat "$tmp/shlibs")" || fail "shlibs file: '$(cat "$tmp/shlibs")'"

# ---- Contents --------------------------------------------------------------------------------------------
contents() { dpkg-deb -c "$(deb "$1")" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | grep -v '^$'; }
# expect_files PACKAGE PATH...: each path is in the package.  refuse_files PACKAGE REGEX: none matches.
expect_files() {
  local p=$1 f
  shift
  for f in "$@"; do contents "$p" | grep -qx "$f" || fail "$p lacks $f"; done
}
refuse_files() {
  local hits
  hits=$(contents "$1" | grep -E "$2" || true)
  [ -z "$hits" ] || fail "$1 holds $(echo "$hits" | tr '\n' ' ')"
}
expect_files "$runtime" "$libdir/libdptrain.so.$version" "$libdir/$so"
if [ -e "$build/lib/libdptrain_mpi.so" ]; then expect_files "$runtime" "$libdir/libdptrain_mpi.so"; fi
refuse_files "$runtime" "^/usr/include|\.h\$|/libdptrain\.so\$|/cmake/|\.pc\$|^/usr/bin|libdptrain_cuda"
expect_files libdptrain-dev /usr/include/dptrain/dptrain.h "$libdir/libdptrain.so" "$libdir/pkgconfig/dptrain.pc" \
  "$libdir/cmake/dptrain/dptrainConfig.cmake" "$libdir/cmake/dptrain/dptrainConfigVersion.cmake" \
  "$libdir/cmake/dptrain/dptrainTargets.cmake"
refuse_files libdptrain-dev "\.so\.|_mpi|_cuda|^/usr/bin"
expect_files dptrain /usr/bin/dptrain
refuse_files dptrain "^/usr/(lib|include)"
if [ ${#expected[@]} -eq 4 ]; then
  expect_files "$runtime-cuda" "$libdir/libdptrain_cuda.so"
  refuse_files "$runtime-cuda" "libdptrain\.so|_mpi|^/usr/(include|bin)"
fi
for p in "${expected[@]}"; do
  refuse_files "$p" "^/(etc|opt|home|root|tmp|usr/local)|_CPack|CMakeFiles|/java/|/csharp/|/go/|share/doc/dptrain/html"
done
[ "$failures" -eq 0 ] || exit 1

# ---- Install ---------------------------------------------------------------------------------------------
debs=()
for p in "${expected[@]}"; do debs+=("$(deb "$p")"); done
installed=("${expected[@]}")
dpkg -i "${debs[@]}" >"$tmp/dpkg.log" 2>&1 || { cat "$tmp/dpkg.log"; echo "FAIL: dpkg -i"; exit 1; }
echo "ok: dpkg -i ${expected[*]}"
soname=$(objdump -p "$libdir/libdptrain.so.$version" | awk '$1 == "SONAME" {print $2}')
[ "$soname" = "$so" ] && echo "ok: SONAME $soname" || fail "SONAME '$soname'"
# (with a merged /usr the cache may name /lib/<triplet>: compare real paths. awk reads to the end: exiting at
# the first match killed ldconfig with SIGPIPE when its listing outgrew the pipe, and pipefail ended the test.)
cached=$(ldconfig -p | awk -v so="$so" '$1 == so && !found {print $NF; found = 1}')
[ -n "$cached" ] && [ "$(realpath "$cached")" = "$libdir/libdptrain.so.$version" ] &&
  echo "ok: $so is in the ld.so cache ($cached)" || fail "$so in the ld.so cache: '$cached'"

# Everything below runs as a user's program would: no LD_LIBRARY_PATH, no PKG_CONFIG_PATH, no prefix hints.
clean_env=(env -u LD_LIBRARY_PATH -u PKG_CONFIG_PATH -u CMAKE_PREFIX_PATH -u DPTRAIN_BACKEND_PATH
  DPTRAIN_CPU_DEVICES=2)

# ---- A C program through pkg-config ----------------------------------------------------------------------
pc_version=$("${clean_env[@]}" pkg-config --modversion dptrain)
[ "$pc_version" = "$version" ] && echo "ok: pkg-config --modversion dptrain = $pc_version" ||
  fail "pkg-config --modversion dptrain = '$pc_version'"
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
"${clean_env[@]}" cc -std=c99 -Wall -Wextra -Werror "$source/samples/c/quickstart.c" \
  $("${clean_env[@]}" pkg-config --cflags --libs dptrain) -o "$tmp/quickstart"
resolved=$("${clean_env[@]}" ldd "$tmp/quickstart" | awk -v so="$so" '$1 == so {print $3}')
[ "$(realpath "$resolved")" = "$libdir/libdptrain.so.$version" ] && echo "ok: quick start links $resolved" ||
  fail "the quick start resolves $so to '$resolved'"
start=$SECONDS
out=$("${clean_env[@]}" "$tmp/quickstart") || fail "the quick start failed: $out"
acc=$(echo "$out" | sed -n 's/^test accuracy \([0-9.]*\) after 1 epoch(s)$/\1/p')
python3 -c "import sys; sys.exit(0 if float('${acc:-0}') >= 0.70 else 1)" &&
  echo "ok: quick start (pkg-config) test accuracy $acc in $((SECONDS - start)) s" ||
  fail "quick start accuracy '$acc' below 0.70: $out"

# ---- A CMake project through find_package(dptrain) -------------------------------------------------------
"${clean_env[@]}" cmake -S "$source/tests/install" -B "$tmp/consumer" \
  -DQUICKSTART_SOURCE="$source/samples/c/quickstart.c" >"$tmp/consumer.log" 2>&1 &&
  "${clean_env[@]}" cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 ||
  { cat "$tmp/consumer.log"; fail "find_package(dptrain) consumer did not build"; }
found=$(sed -n 's/^dptrain_DIR:PATH=//p' "$tmp/consumer/CMakeCache.txt" 2>/dev/null || true)
[ "$found" = "$libdir/cmake/dptrain" ] && echo "ok: find_package(dptrain) found $found" ||
  fail "find_package(dptrain) found '$found', expected $libdir/cmake/dptrain"
resolved=$("${clean_env[@]}" ldd "$tmp/consumer/quickstart" 2>/dev/null | awk -v so="$so" '$1 == so {print $3}')
[ "$(realpath "${resolved:-/nonexistent}")" = "$libdir/libdptrain.so.$version" ] &&
  echo "ok: the find_package consumer links $resolved" || fail "the consumer resolves $so to '$resolved'"

# ---- The installed CLI -----------------------------------------------------------------------------------
[ "$(command -v dptrain)" = /usr/bin/dptrain ] || fail "dptrain on PATH is '$(command -v dptrain)'"
out=$("${clean_env[@]}" /usr/bin/dptrain --version)
[ "$out" = "dptrain $version (built against $version)" ] && echo "ok: $out" || fail "dptrain --version: '$out'"
out=$("${clean_env[@]}" /usr/bin/dptrain devices --json) || fail "dptrain devices: $out"
devices=$(echo "$out" | python3 -c "import json, sys; print(' '.join(d['name'] for d in json.load(sys.stdin)['devices']))")
[ "$devices" = "cpu:0 cpu:1" ] && echo "ok: dptrain devices: $devices" || fail "dptrain devices listed '$devices'"
if [ ${#expected[@]} -eq 4 ]; then
  # The installed library finds the installed CUDA module in its own directory.
  module=$(echo "$out" | python3 -c "import json, sys; print(json.load(sys.stdin)['cuda']['module'])")
  [ "$module" = "$libdir/libdptrain_cuda.so" ] && echo "ok: CUDA module found at $module" ||
    fail "the installed library did not load the installed CUDA module: $out"
fi
train=(train --model mlp --epochs 1 --train-limit 1000 --test-limit 200 --devices cpu:2 --json)
checksum() { python3 -c "import json, sys; print(json.load(sys.stdin)['param_checksum'])"; }
installed_sum=$("${clean_env[@]}" /usr/bin/dptrain "${train[@]}" 2>/dev/null | checksum) || true
build_sum=$("${clean_env[@]}" "$build/bin/dptrain" "${train[@]}" 2>/dev/null | checksum) || true
[ -n "$installed_sum" ] && [ "$installed_sum" = "$build_sum" ] &&
  echo "ok: installed and build-tree CLI train to the same checksum $installed_sum" ||
  fail "training checksums: installed '$installed_sum', build tree '$build_sum'"

[ "$failures" -eq 0 ] || exit 1
echo "all checks passed"
