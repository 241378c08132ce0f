# shellcheck shell=bash
# Shared helpers of the cli tests. Source it after setting DPTRAIN to the binary under test.
set -u

PYTHON=${PYTHON:-python3}
FAILURES=0

# A scratch directory removed on exit.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dptrain-cli-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() {
  echo "FAIL: $*" >&2
  FAILURES=$((FAILURES + 1))
}

pass() { echo "ok: $*"; }

# Ends the test: status 1 when any check failed.
finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES check(s) failed" >&2
    exit 1
  fi
  echo "all checks passed"
  exit 0
}

# run_cli NAME ARGS...: runs the binary with stdout in $WORK/NAME.out, stderr in $WORK/NAME.err and
# the exit status in $RC.
run_cli() {
  local name=$1
  shift
  "$DPTRAIN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
  # shellcheck disable=SC2034 # RC is read by the scripts that source this file
  RC=$?
}

# json_check FILE EXPR DESCRIPTION: asserts that the Python expression EXPR is true for d = json.load(FILE).
json_check() {
  local file=$1 expr=$2 what=$3
  if "$PYTHON" -c "import json, sys; d = json.load(open(sys.argv[1])); sys.exit(0 if ($expr) else 1)" "$file"; then
    pass "$what"
  else
    fail "$what (expression: $expr; file: $(head -c 400 "$file"))"
  fi
}

# json_get FILE EXPR: prints the value of EXPR for d = json.load(FILE).
json_get() {
  "$PYTHON" -c "import json, sys; d = json.load(open(sys.argv[1])); print($2)" "$1"
}

if [ $# -lt 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 PATH-TO-dptrain" >&2
  exit 2
fi
DPTRAIN=$1
