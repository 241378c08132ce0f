#!/usr/bin/env bash
# csharp_windows: the NuGet package with both platforms' natives (packages/nuget/DPTrain.VERSION.nupkg of the
# cross build) used on Windows, run under Wine with a Windows .NET runtime (.NET Core 3.1, which runs the
# package's net45 assembly). The app folder is laid out as `dotnet publish -r win-x64` lays it out: the
# programs, lib/net45/DPTrain.dll and the files of runtimes/win-x64/native/ side by side.
# Checks: the package's entries for both platforms; runtimes/win-x64/native/ holds only dptrain_csharp.dll (the
# wrapper with the C library inside: a Windows folder cannot hold DPTrain.dll and dptrain.dll, names ignore
# case), which needs only Windows' own DLLs; the assembly's version, its informational version and the native
# library's version are the project's; dptrain_csharp.dll is loaded from the app folder; the C# sample ends with the Linux CLI's param_checksum (samples/csharp/check_checksum.sh; both with
# DPTRAIN_GEMM_KERNEL=portable: Linux would otherwise use OpenBLAS).
# Usage: check_nupkg_windows.sh DOTNET_EXE NUPKG VERSION SOURCE_DIR LINUX_DPTRAIN   (exit 77: no Fashion-MNIST)
set -euo pipefail
dotnet=$(realpath "$1") nupkg=$(realpath "$2") version=$3 source=$(realpath "$4") cli=$(realpath "$5")
fail() { echo "FAIL: $*"; exit 1; }
wine=$(command -v wine || command -v wine64) || fail "no wine"
export DPTRAIN_GEMM_KERNEL=portable

entries=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$nupkg")
for entry in lib/net45/DPTrain.dll lib/net45/DPTrain.xml runtimes/linux-x64/native/libdptrain_csharp.so \
  runtimes/win-x64/native/dptrain_csharp.dll; do
  grep -qx "$entry" <<<"$entries" || fail "no $entry in $nupkg"
done
windows_natives=$(grep '^runtimes/win-x64/native/.' <<<"$entries" | tr '\n' ' ')
[ "$windows_natives" = "runtimes/win-x64/native/dptrain_csharp.dll " ] ||
  fail "runtimes/win-x64/native/ holds $windows_natives"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$nupkg" "$work/DPTrain"
package=$work/DPTrain
cp "$package/runtimes/win-x64/native/dptrain_csharp.dll" "$work/wrapper.dll"
imports=$(x86_64-w64-mingw32-objdump -p "$work/wrapper.dll" | sed -n 's/^\s*DLL Name: //p' | tr -d '\r' | sort |
  tr '\n' ' ')
[ "$imports" = "KERNEL32.dll msvcrt.dll " ] || fail "dptrain_csharp.dll imports $imports"
echo "dptrain_csharp.dll imports $imports"

app=$work/app
mkdir "$app"
cp "$package/lib/net45/DPTrain.dll" "$package"/runtimes/win-x64/native/*.dll "$app/"
clashes=$(ls "$app" | tr 'A-Z' 'a-z' | sort | uniq -d)
[ -z "$clashes" ] || fail "file names that differ only in case, one file on Windows: $clashes"
for program in "$source/bindings/csharp/tests/package/PackageInfo.cs" "$source/samples/csharp/TrainFashionMnist.cs"; do
  mcs -nologo -r:"$package/lib/net45/DPTrain.dll" -out:"$app/$(basename "$program" .cs).exe" "$program"
done
cat >"$app/app.runtimeconfig.json" <<JSON
{"runtimeOptions": {"tfm": "netcoreapp3.1", "framework": {"name": "Microsoft.NETCore.App", "version": "3.1.23"}}}
JSON
cat >"$work/dotnet-run" <<SH
#!/usr/bin/env bash
# dotnet-run PROGRAM.exe [ARGS...]: the program under Wine's .NET runtime, Windows' line ends removed.
set -o pipefail
"$wine" "$dotnet" exec --runtimeconfig "$app/app.runtimeconfig.json" "\$@" 2>"$work/dotnet.err" | tr -d '\r'
SH
chmod +x "$work/dotnet-run"

info=$("$work/dotnet-run" "$app/PackageInfo.exe") || fail "PackageInfo: $(tail -n 5 "$work/dotnet.err")"
echo "$info"
value() { sed -n "s/^$1 //p" <<<"$info"; }
[ "$(value assembly_version)" = "$version.0" ] || fail "assembly version $(value assembly_version), project $version"
[ "$(value informational_version)" = "$version" ] || fail "informational version $(value informational_version)"
[ "$(value library_version)" = "$version" ] || fail "native library version $(value library_version)"
mapped=$(value mapped | tr '\\' '/' | sed 's|^\(//?/\)\?[A-Za-z]:||' | tr 'A-Z' 'a-z')
[ "$mapped" = "$(tr 'A-Z' 'a-z' <<<"$app/dptrain_csharp.dll")" ] || fail "dptrain_csharp.dll not loaded from $app: $mapped"
echo "PASS: DPTrain $version on Windows (Wine), natives from the package's runtimes/win-x64/native"

bash "$source/samples/csharp/check_checksum.sh" "$cli" "$work/dotnet-run" "$app/TrainFashionMnist.exe"
