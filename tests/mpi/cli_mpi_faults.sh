#!/usr/bin/env bash
# `dptrain train` under mpirun, as users meet it: on a terminal (rank 0 on mpirun's pseudo-terminal, the
# others not), with options that differ between the processes, with a process that stalls (SIGSTOP) or
# dies (SIGKILL), and with mpirun itself killed. Every case ends the whole job, with the library's error
# on a surviving process where there is one, and leaves no dptrain process behind. Prints the measured
# times (docs/reliability.md).
# usage: cli_mpi_faults.sh PATH-TO-dptrain PATH-TO-mpirun
# shellcheck source=tests/cli/common.sh
source "$(dirname "$0")/../cli/common.sh" "$1"
MPIRUN=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

DATA=${DPTRAIN_DATA_DIR:-/usr/share/datasets/fashion-mnist}
if [ ! -f "$DATA/train-images-idx3-ubyte.gz" ]; then
  echo "skipped: Fashion-MNIST not found in $DATA"
  exit 77
fi
MPI=("$MPIRUN" --oversubscribe --bind-to none)
# A run long enough to be interrupted; the scratch path in --metrics marks its processes.
LONG=(train --model lenet --devices cpu:1 --epochs 50 --train-limit 20000 --test-limit 500)

now() { date +%s.%N; }
elapsed() { "$PYTHON" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
# The dptrain processes of the job marked by $1 (mpirun's own command line starts with mpirun).
ranks() { pgrep -f "^$DPTRAIN train .*$1" || true; }
rank_of() { tr '\0' '\n' <"/proc/$1/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p'; }
# wait_for SECONDS COMMAND...: polls COMMAND every 0.1 s; status 1 if it never succeeded.
wait_for() {
  local deadline
  deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}
training() { grep -q 'img/s' "$1"; }
gone() { [ -z "$(ranks "$1")" ]; }
job_ended() { ! kill -0 "$1" 2>/dev/null; }

# 1. Rank 0 on a terminal, rank 1 not: the progress reports (and the stop votes at each) are the same.
script -qec "${MPI[*]} -np 2 $DPTRAIN train --model lenet --devices cpu:1 --epochs 1 --train-limit 3000 \
  --test-limit 500" /dev/null >"$WORK/tty.out" 2>&1
RC=$?
[ "$RC" -eq 0 ] && pass "on a terminal: mpirun -np 2 exited with 0" || fail "on a terminal: exit $RC: $(tail -n 5 "$WORK/tty.out")"
grep -q 'test accuracy' "$WORK/tty.out" && pass "on a terminal: the run finished with its summary" ||
  fail "on a terminal: no summary"
grep -q 'MPI_ERR' "$WORK/tty.out" && fail "on a terminal: an MPI error: $(grep MPI_ERR "$WORK/tty.out")"

# 2. Options that differ between the processes: every process names the first field that differs.
SHORT=(train --model lenet --devices cpu:1 --epochs 1 --train-limit 1000 --test-limit 100)
start=$(now)
"${MPI[@]}" -np 1 "$DPTRAIN" "${SHORT[@]}" --seed 1 : -np 1 "$DPTRAIN" "${SHORT[@]}" --seed 2 \
  >"$WORK/mismatch.out" 2>"$WORK/mismatch.err"
RC=$?
[ "$RC" -ne 0 ] && pass "different --seed: the job failed (exit $RC, $(elapsed "$start" "$(now)") s)" ||
  fail "different --seed: the job succeeded"
# Occurrences, not lines: mpirun may join the two processes' lines when they write at the same moment.
n=$(grep -o "disagree on the trainer's seed" "$WORK/mismatch.err" | wc -l)
[ "$n" -eq 2 ] && pass "different --seed: both processes name the seed" ||
  fail "different --seed: $n processes name it: $(head -n 3 "$WORK/mismatch.err")"
"${MPI[@]}" -np 1 "$DPTRAIN" "${SHORT[@]}" --progress-every 2 : -np 1 "$DPTRAIN" "${SHORT[@]}" \
  >"$WORK/mismatch2.out" 2>"$WORK/mismatch2.err"
n=$(grep -o "disagree on fit's progress_every" "$WORK/mismatch2.err" | wc -l)
[ "$n" -eq 2 ] && pass "different --progress-every: both processes name it" ||
  fail "different --progress-every: $n processes name it: $(head -n 3 "$WORK/mismatch2.err")"
"${MPI[@]}" -np 1 "$DPTRAIN" "${SHORT[@]}" --shard gradients : -np 1 "$DPTRAIN" "${SHORT[@]}" \
  >"$WORK/mismatch3.out" 2>"$WORK/mismatch3.err"
n=$(grep -o "disagree on the trainer's shard" "$WORK/mismatch3.err" | wc -l)
[ "$n" -eq 2 ] && pass "different --shard: both processes name it" ||
  fail "different --shard: $n processes name it: $(head -n 3 "$WORK/mismatch3.err")"
echo

# start_long NAME TIMEOUT [deaf]: a long run in the background; sets JOB (mpirun's pid), R0 and R1 (the
# ranks). deaf: the ranks ignore SIGHUP and SIGPIPE (as under nohup or a supervisor), so that a dead
# launcher's closed pseudo-terminal does not end them (Open MPI's runtime still does, when it loses its
# daemon; dptrain's own check, a changed parent at the next collective, does not depend on it).
start_long() {
  local wrap=()
  [ "${3:-}" = deaf ] && wrap=(bash -c 'trap "" HUP PIPE; exec "$0" "$@"')
  "${MPI[@]}" -np 2 "${wrap[@]}" "$DPTRAIN" "${LONG[@]}" --timeout "$2" --metrics "$WORK/$1.csv" \
    >"$WORK/$1.out" 2>"$WORK/$1.err" &
  JOB=$!
  R0="" R1=""
  if wait_for 60 training "$WORK/$1.out"; then
    for p in $(ranks "$WORK/$1.csv"); do
      case $(rank_of "$p") in 0) R0=$p ;; 1) R1=$p ;; esac
    done
    [ -n "$R0" ] && [ -n "$R1" ] && return 0
    fail "$1: ranks not found"
  else
    fail "$1: training did not start: $(tail -n 3 "$WORK/$1.err")"
  fi
  kill -9 "$JOB" $(ranks "$WORK/$1.csv") 2>/dev/null
  wait "$JOB" 2>/dev/null
  return 1
}

# end_check NAME START LIMIT: the job ends within LIMIT s of START and leaves no process behind.
end_check() {
  if wait_for "$3" job_ended "$JOB"; then
    pass "$1: the job ended $(elapsed "$2" "$(now)") s after the fault (limit $3 s)"
  else
    fail "$1: the job still runs $3 s after the fault"
  fi
  wait_for 5 gone "$WORK/$1.csv" && pass "$1: no dptrain process left" ||
    fail "$1: processes left: $(ranks "$WORK/$1.csv")"
  kill -9 "$JOB" $(ranks "$WORK/$1.csv") 2>/dev/null
  wait "$JOB" 2>/dev/null
}

# 3. A stalled process with --timeout 2: the other ends with a timeout within 2 x 2 s, then the job ends.
if start_long stall 2; then
  kill -STOP "$R1"
  start=$(now)
  wait_for 4 job_ended "$R0" && pass "stall: process 0 exited $(elapsed "$start" "$(now)") s after the stall (limit 4 s = 2 x --timeout)" ||
    fail "stall: process 0 still runs 4 s after the stall"
  grep -q 'timeout' "$WORK/stall.err" && pass "stall: process 0 reports the timeout" ||
    fail "stall: no timeout reported: $(tail -n 3 "$WORK/stall.err")"
  end_check stall "$start" 10
fi

# 4. A process killed: mpirun ends the job.
if start_long death 300; then
  kill -9 "$R1"
  end_check death "$(now)" 10
fi

# kill_launcher NAME WHAT: kills mpirun; every process of the job must be gone within 10 s.
kill_launcher() {
  kill -9 "$JOB"
  local start
  start=$(now)
  wait_for 10 gone "$WORK/$1.csv" && pass "$2: every process exited within $(elapsed "$start" "$(now)") s" ||
    fail "$2: processes left after 10 s: $(ranks "$WORK/$1.csv")"
  kill -9 $(ranks "$WORK/$1.csv") 2>/dev/null
  wait "$JOB" 2>/dev/null
}

# 5. mpirun killed (SIGKILL: it cannot tell its processes), with processes deaf to the hangup of their
# output: they notice at their next collective that their launcher is gone, and exit.
if start_long launcher 300 deaf; then
  kill_launcher launcher "launcher killed"
fi

# 6. A stalled process, then mpirun killed while the other waits for it in a collective (default 300 s
# timeout): the waiting process notices that its launcher is gone; the stopped one, orphaned, gets the
# kernel's SIGHUP and SIGCONT.
if start_long orphans 300; then
  kill -STOP "$R1"
  sleep 1
  kill_launcher orphans "stall, then launcher killed"
fi
finish
