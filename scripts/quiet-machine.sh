# shellcheck shell=bash
# Sourced by the side-by-side benchmarks (scripts/bench-vs-pytorch.sh, tests/bench/pipeline_vs_pytorch.sh):
# waiting for a quiet machine and measuring how much of it other processes used meanwhile. The caller sets
# QUIET_BUSY (cores; default 0.1) and QUIET_WAIT (seconds; default 600).
QUIET_BUSY=${QUIET_BUSY:-0.1}
QUIET_WAIT=${QUIET_WAIT:-600}

# Busy jiffies (all but idle and iowait) of all CPUs, and jiffies per second.
busy_jiffies() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }
HZ=$(getconf CLK_TCK)

# Waits until processes use less than QUIET_BUSY cores over 3 s (or QUIET_WAIT seconds have passed).
wait_quiet() {
  local waited=0 b0 b1 busy
  while :; do
    b0=$(busy_jiffies)
    sleep 3
    b1=$(busy_jiffies)
    busy=$(awk -v d=$((b1 - b0)) -v hz="$HZ" 'BEGIN {printf "%.2f", d / hz / 3}')
    if awk -v b="$busy" -v q="$QUIET_BUSY" 'BEGIN {exit !(b < q)}'; then return 0; fi
    if [ "$waited" -ge "$QUIET_WAIT" ]; then
      echo "(not quiet after ${waited} s: $busy cores busy; measuring anyway)" >&2
      return 0
    fi
    [ "$waited" -eq 0 ] && echo "(waiting for a quiet machine: $busy cores busy)" >&2
    sleep 7
    waited=$((waited + 10))
  done
}

# The CPU seconds (user + system) of this shell's finished children, from `times` output in file $1.
children_cpu() {
  awk 'NR == 2 {
    for (i = 1; i <= 2; ++i) { split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] }
    print s }' "$1"
}

# measure FILE CMD...: waits for a quiet machine, runs CMD with its stdout in FILE, and sets OTHERS to the
# mean number of cores that other processes used meanwhile (all busy time less CMD's own).
measure() {
  local out=$1 times_file b0 b1 t0 t1 own0 own1
  shift
  wait_quiet
  times_file=$(mktemp)
  times >"$times_file"
  own0=$(children_cpu "$times_file")
  b0=$(busy_jiffies)
  t0=$(date +%s.%N)
  "$@" >"$out"
  t1=$(date +%s.%N)
  b1=$(busy_jiffies)
  times >"$times_file"
  own1=$(children_cpu "$times_file")
  rm -f "$times_file"
  # shellcheck disable=SC2034 # read by the caller
  OTHERS=$(awk -v b=$((b1 - b0)) -v hz="$HZ" -v t0="$t0" -v t1="$t1" -v o0="$own0" -v o1="$own1" \
    'BEGIN {o = (b / hz - (o1 - o0)) / (t1 - t0); printf "%.2f", o < 0 ? 0 : o}')
}
