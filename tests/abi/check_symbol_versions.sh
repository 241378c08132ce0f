#!/usr/bin/env bash
# The exported symbols and their version nodes are exactly those of tests/abi/symbols.txt:
#   1. every DPT_API function of the public headers is listed (so a new one cannot be forgotten);
#   2. capi/dptrain.map puts each listed name in its listed node, nodes in the listed order, each inheriting
#      the one before, and holds no wildcard and nothing else;
#   3. the built library exports each listed name at its listed node (nm -D), and nothing else;
#   4. the nodes fit the version: DPTRAIN_<major> first, then DPTRAIN_<major>.<minor> with rising minors,
#      none newer than version.h, whose version is also the library file's (libdptrain.so.X.Y.Z);
#   5. against the last release tag v<major>.<minor>.<patch>, if any: nothing released is gone or moved, and
#      what was added since is in a newer node (a released node is closed).
# A symbol that disappears, changes node, or appears unlisted fails the check.
# Usage: check_symbol_versions.sh LIBDPTRAIN SOURCE_DIR
set -euo pipefail
lib=$1 source=$2
list="$source/tests/abi/symbols.txt" map="$source/capi/dptrain.map" include="$source/capi/include/dptrain"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}
# same LABEL_A FILE_A LABEL_B FILE_B HINT: the two sorted line sets are equal, else the differences.
same() {
  local only_a only_b
  only_a=$(comm -23 "$2" "$4") only_b=$(comm -13 "$2" "$4")
  [ -z "$only_a$only_b" ] && return 0
  fail "$1 and $3 differ ($5)"
  [ -z "$only_a" ] || printf '  only in %s:\n%s\n' "$1" "$(sed 's/^/    /' <<<"$only_a")"
  [ -z "$only_b" ] || printf '  only in %s:\n%s\n' "$3" "$(sed 's/^/    /' <<<"$only_b")"
}

# The list: "name NODE" lines, each name once; the nodes in their order of first appearance.
parse_list() {
  awk '!/^[ \t]*(#|$)/ {
         if (NF == 2 && $1 ~ /^dpt_[A-Za-z0-9_]+$/ && $2 ~ /^DPTRAIN_/) print $1, $2
         else { print "line " NR " is not \"dpt_name DPTRAIN_node\": " $0 > "/dev/stderr"; exit 1 }
       }'
}
parse_list <"$list" >"$tmp/list.raw" 2>"$tmp/err" ||
  { echo "FAIL: tests/abi/symbols.txt: $(cat "$tmp/err")"; exit 1; }
sort "$tmp/list.raw" >"$tmp/list"
cut -d' ' -f1 "$tmp/list" >"$tmp/list.names"
dups=$(uniq -d "$tmp/list.names")
[ -z "$dups" ] || { echo "FAIL: listed more than once in symbols.txt: $(paste -sd' ' <<<"$dups")"; exit 1; }
awk '!seen[$2]++ {print $2}' "$tmp/list.raw" >"$tmp/list.nodes"

# 1. The headers: the function named on each DPT_API line.
grep -h '^DPT_API' "$include"/*.h >"$tmp/decls"
sed -nE 's/^DPT_API[^(]*[^A-Za-z0-9_](dpt_[A-Za-z0-9_]+)[[:space:]]*\(.*/\1/p' "$tmp/decls" |
  sort >"$tmp/header.names"
[ "$(wc -l <"$tmp/header.names")" = "$(wc -l <"$tmp/decls")" ] ||
  fail "a DPT_API line in $include does not name its dpt_ function before '(' (keep name and DPT_API on one line)"
same "the headers' DPT_API functions" "$tmp/header.names" "symbols.txt" "$tmp/list.names" \
  "a new function goes to symbols.txt and capi/dptrain.map, in the newest node; a listed one is never removed"

# 2. The version script: comments removed, then tokens: NODE { global: names; local: *; } [PARENT];
awk '
  { line = $0; text = ""
    while (line != "") {
      if (comment) { i = index(line, "*/"); if (!i) line = ""; else { line = substr(line, i + 2); comment = 0 } }
      else { i = index(line, "/*"); if (!i) { text = text line; line = "" }
             else { text = text substr(line, 1, i - 1) " "; line = substr(line, i + 2); comment = 1 } }
    }
    gsub(/[{};:]/, " & ", text)
    n = split(text, tok, /[ \t]+/)
    for (k = 1; k <= n; ++k) if (tok[k] != "") t[++count] = tok[k]
  }
  function bad(what) { print what > "/dev/stderr"; exit 1 }
  END {
    for (k = 1; k <= count; ++k) {
      if (node == "") {  # NODE {
        if (t[k + 1] != "{") bad("expected \"NODE {\" at " t[k])
        node = t[k++]; mode = ""; print "node", node
      } else if (t[k] == "}") {  # } PARENT; (every node but the first inherits the one before it)
        parent = t[k + 1] == ";" ? "" : t[++k]
        if (parent != prev) bad("node " node " inherits \"" parent "\", not the node before it, \"" prev "\"")
        if (t[++k] != ";") bad("expected \";\" after the end of node " node)
        prev = node; node = ""
      } else if ((t[k] == "global" || t[k] == "local") && t[k + 1] == ":") {
        mode = t[k++]
      } else {  # name;
        if (t[k + 1] != ";") bad("expected \";\" after " t[k] " in " node)
        if (mode == "global" && t[k] ~ /[*?[]/) bad("wildcard " t[k] " in " node ": list each name")
        if (mode == "global") print t[k], node
        else if (mode != "local" || t[k] != "*" || prev != "")
          bad(t[k] " in " node ": expected a name under global:, or * under local: of the first node")
        ++k
      }
    }
    if (node != "") bad("node " node " is not closed")
  }' "$map" >"$tmp/map.raw" 2>"$tmp/err" || { echo "FAIL: capi/dptrain.map: $(cat "$tmp/err")"; exit 1; }
grep '^node ' "$tmp/map.raw" | cut -d' ' -f2 >"$tmp/map.nodes"
grep -v '^node ' "$tmp/map.raw" | sort >"$tmp/map"
same "capi/dptrain.map" "$tmp/map" "symbols.txt" "$tmp/list" "names and nodes must agree"
cmp -s "$tmp/map.nodes" "$tmp/list.nodes" ||
  fail "nodes: capi/dptrain.map has $(paste -sd' ' "$tmp/map.nodes")," \
    "symbols.txt $(paste -sd' ' "$tmp/list.nodes")"

# 3. The library: defined dynamic symbols as "name NODE" (the absolute symbols are the nodes themselves).
nm -D --defined-only --with-symbol-versions "$lib" >"$tmp/nm"
awk '$2 != "A" {name = $3; node = "(no version)"
                if ((i = index(name, "@")) > 0) { node = substr(name, i); name = substr(name, 1, i - 1)
                                                  sub(/^@@?/, "", node) }
                print name, node}' "$tmp/nm" | sort >"$tmp/lib"
awk '$2 == "A" {print $3}' "$tmp/nm" | sed 's/@.*//' | sort >"$tmp/lib.nodes"
same "$(basename "$lib")" "$tmp/lib" "symbols.txt" "$tmp/list" "exported names and their nodes"
same "the library's version nodes" "$tmp/lib.nodes" "symbols.txt's nodes" <(sort "$tmp/list.nodes") "nodes"

# 4. The version: version.h, the library file's name, the nodes.
major=$(sed -n 's/^#define DPT_VERSION_MAJOR \([0-9]*\)$/\1/p' "$include/version.h")
minor=$(sed -n 's/^#define DPT_VERSION_MINOR \([0-9]*\)$/\1/p' "$include/version.h")
patch=$(sed -n 's/^#define DPT_VERSION_PATCH \([0-9]*\)$/\1/p' "$include/version.h")
[ -n "$major" ] && [ -n "$minor" ] && [ -n "$patch" ] ||
  { echo "FAIL: no DPT_VERSION_MAJOR/MINOR/PATCH in version.h"; exit 1; }
file=$(basename "$(readlink -f "$lib")")
[ "$file" = "libdptrain.so.$major.$minor.$patch" ] ||
  fail "the library file is $file but version.h says $major.$minor.$patch (project(VERSION) in CMakeLists.txt?)"
last=-1
while read -r node; do
  if [ "$last" = -1 ]; then
    [ "$node" = "DPTRAIN_$major" ] || fail "the first node is $node, expected DPTRAIN_$major"
    last=0
    continue
  fi
  n=$(sed -n "s/^DPTRAIN_$major\.\([0-9][0-9]*\)$/\1/p" <<<"$node")
  if [ -z "$n" ]; then
    fail "node $node is not DPTRAIN_$major.<minor>"
  elif [ "$n" -le "$last" ]; then
    fail "node $node comes after a node of the same or a later minor version"
  elif [ "$n" -gt "$minor" ]; then
    fail "node $node is newer than version $major.$minor.$patch:" \
      "bump the minor version (version.h, CMakeLists.txt)"
  else
    last=$n
  fi
done <"$tmp/list.nodes"

# 5. The last release, where the source is a git checkout with a tag v<major>.<minor>.<patch>: each of its
#    lines is still listed, and a name added since then is in a node newer than that release.
release=""
if git -C "$source" rev-parse --git-dir >/dev/null 2>&1; then
  release=$(git -C "$source" tag --list "v$major.*" --sort=-v:refname | grep -E "^v$major\.[0-9]+\.[0-9]+$" |
    head -n 1 || true)
fi
if [ -n "$release" ] &&
  git -C "$source" show "$release:tests/abi/symbols.txt" >"$tmp/released.txt" 2>/dev/null; then
  parse_list <"$tmp/released.txt" | sort >"$tmp/released" ||
    fail "$release:tests/abi/symbols.txt does not parse"
  gone=$(comm -23 "$tmp/released" "$tmp/list")
  [ -z "$gone" ] || fail "released in $release, now gone or moved: $(paste -sd' ' <<<"$gone")"
  released_minor=$(cut -d. -f2 <<<"$release")
  while read -r name node; do
    n=$(sed -n "s/^DPTRAIN_$major\.\([0-9][0-9]*\)$/\1/p" <<<"$node")
    [ -n "$n" ] && [ "$n" -gt "$released_minor" ] ||
      fail "$name is new since $release, but its node $node was released:" \
        "use DPTRAIN_$major.$((released_minor + 1))"
  done < <(comm -13 "$tmp/released" "$tmp/list")
  release="; released in $release: all kept"
else
  release="; no release tag v$major.x.y to compare with"
fi

[ "$failed" = 0 ] || exit 1
per_node=$(awk '{print $2}' "$tmp/list" | sort | uniq -c | awk '{printf "%s%s %s", sep, $2, $1; sep = ", "}')
echo "$(basename "$lib") $major.$minor.$patch: $(wc -l <"$tmp/list") symbols as listed, $per_node$release"
