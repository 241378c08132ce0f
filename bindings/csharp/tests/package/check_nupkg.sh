#!/usr/bin/env bash
# csharp_nupkg_consumer: DPTrain.<version>.nupkg used as a consumer uses it. In an empty folder, nuget restores
# the package from the local feed, mcs builds PackageInfo.cs and the C# sample against
# packages/DPTrain/lib/net45/DPTrain.dll, each program's .exe.config points Mono's assembly probing there
# (nothing is copied out of the package), and both run with no LD_LIBRARY_PATH and no MONO_PATH.
# Checks: the package's entries; the assembly's version, its informational version and the native library's
# version equal the project's; libdptrain and the wrapper are mapped from the package's
# runtimes/linux-x64/native; the sample's param_checksum equals the C CLI's (samples/csharp/check_checksum.sh).
# Usage: check_nupkg.sh FEED_DIR PROJECT_VERSION DPTRAIN_CLI SOURCE_DIR   (exit 77: no Fashion-MNIST)
set -euo pipefail
feed=$(realpath "$1") version=$2 cli=$(realpath "$3") source=$(realpath "$4")
nupkg=$feed/DPTrain.$version.nupkg
[ -f "$nupkg" ] || { echo "FAIL: $nupkg was not built"; exit 1; }
fail() { echo "FAIL: $*"; exit 1; }

native=runtimes/linux-x64/native
entries=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$nupkg")
echo "$entries"
for entry in DPTrain.nuspec lib/net45/DPTrain.dll lib/net45/DPTrain.xml lib/net45/DPTrain.dll.config \
  "$native/libdptrain.so.${version%%.*}" "$native/libdptrain_csharp.so"; do
  grep -qx "$entry" <<<"$entries" || fail "no $entry in $nupkg"
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
app=$(realpath "$tmp")/app
mkdir "$app"
cd "$app"
unset LD_LIBRARY_PATH MONO_PATH
# A fresh HOME: nuget 2.8's machine cache could otherwise hold an older package of the same version.
export HOME=$tmp/home
nuget install DPTrain -Source "$feed" -OutputDirectory packages -ExcludeVersion -NoCache -NonInteractive
lib=packages/DPTrain/lib/net45
for program in "$source/bindings/csharp/tests/package/PackageInfo.cs" \
  "$source/samples/csharp/TrainFashionMnist.cs"; do
  name=$(basename "$program" .cs)
  mcs -nologo -r:$lib/DPTrain.dll -out:$name.exe "$program"
  cat >$name.exe.config <<XML
<configuration>
  <runtime>
    <assemblyBinding xmlns="urn:schemas-microsoft-com:asm.v1"><probing privatePath="$lib" /></assemblyBinding>
  </runtime>
</configuration>
XML
done
copies=$(find . -path ./packages -prune -o \( -name 'DPTrain.dll' -o -name 'libdptrain*' \) -print)
[ -z "$copies" ] || fail "files of the package outside packages/: $copies"

info=$(mono PackageInfo.exe)
echo "$info"
value() { sed -n "s/^$1 //p" <<<"$info"; }
[ "$(value assembly_version)" = "$version.0" ] || fail "assembly version $(value assembly_version), project $version"
[ "$(value informational_version)" = "$version" ] || fail "informational version $(value informational_version)"
[ "$(value library_version)" = "$version" ] || fail "native library version $(value library_version)"
[ "$(value assembly_path)" = "$app/$lib/DPTrain.dll" ] || fail "DPTrain.dll loaded from $(value assembly_path)"
mapped=$(value mapped)
for file in "libdptrain.so.${version%%.*}" libdptrain_csharp.so; do
  grep -qx "$app/packages/DPTrain/$native/$file" <<<"$mapped" || fail "$file not mapped from the package"
done
outside=$(grep -v "^$app/packages/DPTrain/$native/" <<<"$mapped" || true)
[ -z "$outside" ] || fail "native libraries mapped from outside the package: $outside"
echo "PASS: DPTrain $version from the package, natives from $native"

bash "$source/samples/csharp/check_checksum.sh" "$cli" mono "$app/TrainFashionMnist.exe"
