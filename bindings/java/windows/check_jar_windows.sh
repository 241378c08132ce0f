#!/usr/bin/env bash
# java_windows: the jar with both platforms' natives (packages/dptrain-VERSION.jar of the cross build) as a
# Windows user gets it: BundledJarApp.java (compiled by the build machine's javac) runs with a Windows JVM
# under Wine, in an empty folder with only that jar on its classpath and no dptrain cache in %LOCALAPPDATA%.
# Checks: the jar holds natives/linux-x86_64/ and natives/windows-x86_64/ (dptrain.dll, dptrain_java.dll,
# index.txt); dptrain_java.dll imports only dptrain.dll and Windows' own DLLs and exports the JNI functions;
# the manifest's version and the native library's are the project's; the natives are extracted to
# %LOCALAPPDATA%\dptrain\VERSION\windows-x86_64; the training ends with the Linux CLI's param_checksum (both
# with DPTRAIN_GEMM_KERNEL=portable: Linux would otherwise use OpenBLAS); a second run reuses the extracted
# files as they are.
# Usage: check_jar_windows.sh JAVA_EXE JAVAC JAR VERSION APP_SOURCE LINUX_DPTRAIN   (exit 77: no Fashion-MNIST)
set -uo pipefail
JAVA_EXE=$1 JAVAC=$2 JAR=$3 VERSION=$4 APP=$5 CLI=$6
# shellcheck source=bindings/java/src/it/jar_checks.sh
# (exits 77, skipped, without Fashion-MNIST; defines fail)
source "$(dirname "$0")/../src/it/jar_checks.sh"
wine=$(command -v wine || command -v wine64) || fail "no wine"
export DPTRAIN_GEMM_KERNEL=portable

entries=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$JAR")
for entry in natives/linux-x86_64/index.txt natives/windows-x86_64/index.txt natives/windows-x86_64/dptrain.dll \
  natives/windows-x86_64/dptrain_java.dll; do
  grep -qx "$entry" <<<"$entries" || fail "no $entry in $JAR"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/app"
cp "$JAR" "$APP" "$work/app/"
jar_name=$(basename "$JAR")
cd "$work/app" || exit 1
"$JAVAC" -cp "$jar_name" -d . BundledJarApp.java || fail "javac"

objdump=x86_64-w64-mingw32-objdump
python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract("natives/windows-x86_64/dptrain_java.dll", sys.argv[2])' \
  "$JAR" "$work/inspect"
jni=$work/inspect/natives/windows-x86_64/dptrain_java.dll
imports=$("$objdump" -p "$jni" | sed -n 's/^\s*DLL Name: //p' | tr -d '\r' | sort | tr '\n' ' ')
[ "$imports" = "KERNEL32.dll dptrain.dll msvcrt.dll " ] || fail "dptrain_java.dll imports $imports"
jni_exports=$("$objdump" -p "$jni" | grep -cE '^\s*\[ *[0-9]+\] Java_org_dptrain_' || true)
[ "$jni_exports" -gt 100 ] || fail "dptrain_java.dll exports $jni_exports JNI functions"
echo "dptrain_java.dll: imports $imports; exports $jni_exports JNI functions"

# The user's %LOCALAPPDATA% as Wine sets it (Wine sets it from its prefix, whatever the environment says),
# emptied of dptrain's cache first.
localappdata=$("$wine" cmd /c echo %LOCALAPPDATA% 2>/dev/null | tr -d '\r')
localappdata=$(winepath -u "$localappdata" 2>/dev/null) && [ -d "$localappdata" ] ||
  fail "no %LOCALAPPDATA% folder in the Wine prefix ($localappdata)"
rm -rf "$localappdata/dptrain/$VERSION"
unset JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS CLASSPATH DPTRAIN_BACKEND_PATH
# run NAME [ARGS...]: the program under Wine, its output in $work/NAME.out.
run() {
  local name=$1
  shift
  "$wine" "$JAVA_EXE" -cp "$jar_name;." BundledJarApp "$@" 2>"$work/$name.err" | tr -d '\r' >"$work/$name.out"
  local rc=${PIPESTATUS[0]}
  sed "s/^/[$name] /" "$work/$name.out"
  [ "$rc" -eq 0 ] || fail "$name exited with $rc: $(tail -n 5 "$work/$name.err")"
}
field() { sed -n "s/^$1 //p" "$work/$2.out"; }

start=$(date +%s)
run first
[ "$(field implementation_version first)" = "$VERSION" ] || fail "Implementation-Version is not $VERSION"
[ "$(field library_version first)" = "$VERSION" ] || fail "the loaded library is not version $VERSION"
cache=$localappdata/dptrain/$VERSION/windows-x86_64
extracted=$(ls -A "$cache" 2>/dev/null | tr '\n' ' ')
[ "$extracted" = "dptrain.dll dptrain_java.dll index.txt " ] || fail "extracted to $cache: '$extracted'"
echo "extracted to %LOCALAPPDATA%\\dptrain\\$VERSION\\windows-x86_64: $extracted($(($(date +%s) - start)) s)"

expect_cli_checksum "$CLI" first
expect_cache_reused second --version
echo "PASS: $jar_name on Windows (Wine) loads its windows-x86_64 natives and trains to Linux's checksum"
