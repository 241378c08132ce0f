#!/usr/bin/env bash
# dptrain-VERSION.jar as a user gets it: BundledJarApp.java is compiled and run in an empty directory with
# only that jar on its classpath (no -D, no LD_LIBRARY_PATH), HOME and XDG_CACHE_HOME in a fresh directory.
# Checks: the manifest's Implementation-Version and the native library's version equal the project's; the
# natives are extracted to $XDG_CACHE_HOME/dptrain/VERSION/PLATFORM, the JNI library's RUNPATH is $ORIGIN; the
# training ends with the CLI's param_checksum; a second run reuses the extracted files (same inodes and
# times) and libdptrain finds its CUDA module next to itself; a truncated file is extracted again; two JVMs
# extracting into one empty cache at once both load; an unusable cache directory falls back to java.io.tmpdir.
# Usage: check_bundled_jar.sh JAVA JAVAC JAR VERSION PLATFORM APP_SOURCE DPTRAIN_CLI
set -u
JAVA=$1 JAVAC=$2 JAR=$3 VERSION=$4 PLATFORM=$5 APP=$6 CLI=$7
# shellcheck source=bindings/java/src/it/jar_checks.sh
# (exits 77, skipped, without Fashion-MNIST; defines fail)
source "$(dirname "$0")/jar_checks.sh"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/app" "$work/home"
cp "$JAR" "$APP" "$work/app/"
jar_name=$(basename "$JAR")
cd "$work/app" || exit 1
unset LD_LIBRARY_PATH JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS CLASSPATH DPTRAIN_BACKEND_PATH
export HOME=$work/home XDG_CACHE_HOME=$work/home/cache
"$JAVAC" -cp "$jar_name" -d . BundledJarApp.java || fail "javac"

# run NAME [ARGS...]: the program, its output in $work/NAME.out.
run() {
  local name=$1
  shift
  "$JAVA" -cp "$jar_name:." BundledJarApp "$@" >"$work/$name.out" 2>&1
  local rc=$?
  sed "s/^/[$name] /" "$work/$name.out"
  [ $rc -eq 0 ] || fail "$name exited with $rc"
}
field() { sed -n "s/^$1 //p" "$work/$2.out"; }

run first
[ "$(field implementation_title first)" = dptrain ] || fail "Implementation-Title is not dptrain"
[ "$(field implementation_version first)" = "$VERSION" ] || fail "Implementation-Version is not $VERSION"
[ "$(field library_version first)" = "$VERSION" ] || fail "the loaded library is not version $VERSION"
cache=$XDG_CACHE_HOME/dptrain/$VERSION/$PLATFORM
[ -f "$cache/libdptrain_java.so" ] || fail "nothing extracted to $cache"
ls -l "$cache"
soname=$(ls "$cache" | grep -E '^libdptrain\.so\.[0-9]+$') || fail "no libdptrain.so.N in $cache"
echo "extracted: $(ls "$cache" | tr '\n' ' ')"
[ -z "$(ls -A "$cache" | grep -v -e '^lib.*\.so' -e '^index\.txt$' || true)" ] || fail "stray files in $cache"
runpath=$(readelf -d "$cache/libdptrain_java.so" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')
[ "$runpath" = '$ORIGIN' ] || fail "RUNPATH of the extracted JNI library is '$runpath', not \$ORIGIN"
readelf -d "$cache/libdptrain_java.so" | grep -q "NEEDED.*\[$soname\]" || fail "the JNI library needs no $soname"

expect_cli_checksum "$CLI" first
expect_cache_reused second --modules
# libdptrain opens its CUDA module from its own directory: the cache. Loaded, or found but short of the CUDA
# libraries or driver; never "not found".
if [ -f "$cache/libdptrain_cuda.so" ]; then
  if [ "$(field cuda_loaded second)" = 1 ]; then
    [ "$(field cuda_module_path second)" = "$cache/libdptrain_cuda.so" ] || fail "CUDA module not from $cache"
  elif grep -q 'not found in' <<<"$(field cuda_reason second)"; then
    fail "libdptrain did not find the CUDA module next to itself"
  fi
fi

# A damaged cache (a truncated file) is extracted again.
size=$(stat -c %s "$cache/libdptrain_java.so")
truncate -s 1000 "$cache/libdptrain_java.so"
run repaired --version
[ "$(stat -c %s "$cache/libdptrain_java.so")" = "$size" ] || fail "the truncated library was not extracted again"

# Two JVMs at once on an empty cache: each writes temporary files and renames them; both must load.
export XDG_CACHE_HOME=$work/home/race
"$JAVA" -cp "$jar_name:." BundledJarApp --version >"$work/race1.out" 2>&1 &
pid=$!
"$JAVA" -cp "$jar_name:." BundledJarApp --version >"$work/race2.out" 2>&1 || fail "race2: $(cat "$work/race2.out")"
wait $pid || fail "race1: $(cat "$work/race1.out")"
[ "$(field library_version race1)" = "$VERSION" ] && [ "$(field library_version race2)" = "$VERSION" ] ||
  fail "a racing JVM did not load version $VERSION"
[ -z "$(ls -A "$XDG_CACHE_HOME/dptrain/$VERSION/$PLATFORM" | grep -v -e '^lib.*\.so' -e '^index\.txt$' || true)" ] ||
  fail "temporary files left by the racing JVMs"

# A cache directory that cannot be created (its parent is a file; root ignores permissions): java.io.tmpdir.
touch "$work/home/file"
export XDG_CACHE_HOME=$work/home/file/cache
mkdir "$work/tmp"
JAVA_TOOL_OPTIONS="-Djava.io.tmpdir=$work/tmp" run fallback --version
[ "$(field library_version fallback)" = "$VERSION" ] || fail "no load through the java.io.tmpdir fallback"
ls "$work/tmp"/dptrain-*/"$VERSION/$PLATFORM/libdptrain_java.so" >/dev/null || fail "nothing in java.io.tmpdir"
echo "PASS: $jar_name loads from its own natives (cache $cache), trains to the CLI's checksum"
