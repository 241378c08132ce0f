#!/usr/bin/env bash
# Cross-builds CMocka (the C API tests' framework) for Windows with mingw-w64, from Debian's source
# tarball of the version Debian 12 ships (libcmocka-dev 1.1.5), into PREFIX (static libcmocka-static.a and
# the headers). Debian has no mingw CMocka package. Idempotent: does nothing when PREFIX has it.
# Usage: scripts/cmocka-mingw.sh PREFIX
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "$1")
[ -f "$prefix/lib/libcmocka-static.a" ] && exit 0
version=1.1.5
sha256=f0ccd8242d55e2fd74b16ba518359151f6f8383ff8aef4976e48393f77bba8b6
url=http://deb.debian.org/debian/pool/main/c/cmocka/cmocka_${version}.orig.tar.xz
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsS --retry 3 -o "$work/cmocka.tar.xz" "$url"
echo "$sha256  $work/cmocka.tar.xz" | sha256sum -c --quiet
tar -C "$work" -xf "$work/cmocka.tar.xz"
cmake -S "$work/cmocka-$version" -B "$work/build" -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/mingw-w64-x86_64.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DWITH_STATIC_LIB=ON -DWITH_EXAMPLES=OFF -DUNIT_TESTING=OFF \
  -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build "$work/build" -j"$(nproc)" >/dev/null
cmake --install "$work/build" >/dev/null
echo "cmocka-mingw: CMocka $version for Windows in $prefix"
