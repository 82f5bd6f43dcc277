# shellcheck shell=bash
# Sourced by the ctest drivers that run a digits trainer under mpirun
# (check_distributed.sh, check_nohang.sh, check_two_hosts.sh,
# check_own_loop_mpi.sh): the processes of the job the driver started,
# found below its own mpirun ($job) and never by name, so that two such
# drivers (or a user's own run) on one machine never see or signal each
# other's ranks. The driver defines fail() and starts the job in the
# background with its pid in $job.

# job_procs [PID]: every process below PID (default: the job's mpirun),
# parents before their children.
job_procs() {
  local c
  for c in $(pgrep -P "${1:-$job}"); do
    echo "$c"
    job_procs "$c"
  done
}

# rank_pid R: the pid of rank R of the job (its environment names the rank).
rank_pid() {
  local r=$1 p
  for p in $(job_procs); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$r"; then
      echo "$p"
      return
    fi
  done
}

# proc_id PID: "PID:<start time>", which names one process even after the
# system gives PID to another; nothing when PID is gone or a zombie (one
# that ended but whose parent has not collected it: where pid 1 does not
# reap, the ranks of a job whose mpirun ended stay zombies).
proc_id() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  # The fields after the command name (which may hold spaces): the state
  # is the 3rd field of the line, the start time the 22nd.
  set -- "$1" ${stat##*) }
  case $2 in Z | X) return 0 ;; esac
  echo "$1:${21}"
}

# still_running PROC_ID...: the ones (from proc_id) still running.
still_running() {
  local id
  for id in "$@"; do [ "$(proc_id "${id%%:*}")" = "$id" ] && echo "${id%%:*}"; done
  return 0
}

# kill_job: SIGKILL to the job still running, its ranks (stopped ones
# continued) and its mpirun, each by pid.
kill_job() {
  local p procs
  [ -n "${job:-}" ] && kill -0 "$job" 2>/dev/null || return 0
  procs=$(job_procs)
  for p in $procs; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  kill -KILL "$job" 2>/dev/null
  return 0
}

# bounded_wait SECS: the job's exit code once it ends; when it has not
# ended within SECS (a rank hangs), kill_job, then the driver's fail().
# Once it has ended its pid is forgotten ($job emptied): the system may
# reuse it.
bounded_wait() {
  local i rc
  for ((i = 0; i < $1 * 10; i++)); do
    kill -0 "$job" 2>/dev/null || {
      wait "$job"
      rc=$?
      job=
      return $rc
    }
    sleep 0.1
  done
  kill_job
  fail "the job did not end within $1 s: a rank hangs"
}

# wait_for_file GLOB SECS: 0 once a file matches GLOB; 1 when the job
# ended first or SECS passed.
wait_for_file() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    compgen -G "$1" >/dev/null && return 0
    kill -0 "$job" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# shellcheck disable=SC2034 # victim, code, killed_after, newest: for the caller
# kill_rank R DIR STEPS SECS: SIGKILL to rank R of the running job, whose
# checkpoints go into DIR and which would stop at STEPS; the job must end
# within SECS, non-zero, with none of its processes left. Sets $victim
# (the pid), $code (the job's exit code), $killed_after (seconds from the
# kill to the job's end) and $newest (the step of DIR's newest sharded
# checkpoint, which must be below STEPS: something to resume).
kill_rank() {
  local p t0 t1 ranks=()
  victim=$(rank_pid "$1")
  [ -n "$victim" ] || fail "cannot find rank $1's process"
  for p in $(job_procs); do ranks+=("$(proc_id "$p")"); done
  t0=$(date +%s.%N)
  kill -9 "$victim"
  bounded_wait "$4"
  code=$?
  t1=$(date +%s.%N)
  killed_after=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
  [ "$code" -ne 0 ] || fail "the job exited 0 after rank $1 was killed"
  p=$(still_running "${ranks[@]}")
  [ -z "$p" ] || fail "a process of the killed job is still running: pid(s) $p"
  newest=
  for p in "$2"/model.ckpt-*.shards; do
    [ -e "$p" ] || continue
    p=${p##*/model.ckpt-}
    p=${p%.shards}
    [ -z "$newest" ] || [ "$p" -gt "$newest" ] && newest=$p
  done
  [ "${newest:-$3}" -lt "$3" ] || fail "the job finished before the kill landed; nothing to resume"
}
