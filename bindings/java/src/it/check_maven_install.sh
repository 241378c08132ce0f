#!/usr/bin/env bash
# The pom: `mvn install:install-file` puts dptrain-VERSION.jar (with -sources and -javadoc) into a fresh local
# repository, offline: Maven's plugins come from Debian's /usr/share/maven-repo (packages maven and
# libmaven-install-plugin-java) through a mirror, so Maven Central is never asked. Then checks the coordinates
# org.dptrain:dptrain:VERSION, that the repository's files equal the built ones, and that a program compiled
# against the repository's jar alone loads the library.
# Usage: check_maven_install.sh MVN JAVA JAVAC JAR POM VERSION APP_SOURCE
set -u
MVN=$1 JAVA=$2 JAVAC=$3 JAR=$4 POM=$5 VERSION=$6 APP=$7
fail() { echo "FAIL: $*"; exit 1; }
if [ ! -d /usr/share/maven-repo/org/apache/maven/plugins/maven-install-plugin ]; then
  echo "skipped: Debian's maven-install-plugin is not installed (apt-get install libmaven-install-plugin-java)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/settings.xml" <<'XML'
<settings>
  <mirrors>
    <mirror><id>debian</id><mirrorOf>*</mirrorOf><url>file:///usr/share/maven-repo</url></mirror>
  </mirrors>
</settings>
XML
base=${JAR%.jar}
export HOME=$work/home XDG_CACHE_HOME=$work/home/cache
mkdir -p "$HOME"
"$MVN" -B -q -s "$work/settings.xml" -Dmaven.repo.local="$work/repo" install:install-file -Dfile="$JAR" \
  -DpomFile="$POM" -Dsources="$base-sources.jar" -Djavadoc="$base-javadoc.jar" || fail "mvn install:install-file"
dir=$work/repo/org/dptrain/dptrain/$VERSION
ls -l "$dir" || fail "nothing installed under org/dptrain/dptrain/$VERSION"
for suffix in .jar -sources.jar -javadoc.jar; do
  cmp "$base$suffix" "$dir/dptrain-$VERSION$suffix" || fail "dptrain-$VERSION$suffix differs from the built one"
done
cmp "$POM" "$dir/dptrain-$VERSION.pom" || fail "the installed pom differs"
grep -q "<version>$VERSION</version>" "$work/repo/org/dptrain/dptrain/maven-metadata-local.xml" ||
  fail "maven-metadata-local.xml does not list $VERSION"

mkdir "$work/app"
cp "$APP" "$work/app/"
cd "$work/app" || exit 1
unset LD_LIBRARY_PATH JAVA_TOOL_OPTIONS CLASSPATH
"$JAVAC" -cp "$dir/dptrain-$VERSION.jar" -d . BundledJarApp.java || fail "javac against the repository's jar"
out=$("$JAVA" -cp "$dir/dptrain-$VERSION.jar:." BundledJarApp --version 2>&1) || fail "run: $out"
echo "$out"
grep -qx "library_version $VERSION" <<<"$out" || fail "the repository's jar did not load version $VERSION"
echo "PASS: org.dptrain:dptrain:$VERSION installed into a local repository and loads from it"
