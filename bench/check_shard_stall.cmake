# The sharded-checkpoint stall bench's smoke test (ctest): `shard_stall
# --quick` under mpirun with 2 ranks exits 0, reports every rank's copy,
# async and sync stalls and the bytes per rank, ends with its goal line
# `goal async_stall_vs_copy min=X median=Y max=Z` (present once, parsing,
# min <= median <= max; the values are timings and are not checked), and
# removes its directory; `--sync-only --quick` runs without the goal line.
# An MPI library without MPI_THREAD_MULTIPLE is told apart: the bench's own
# refusal is accepted and only the sync-only run is checked.
#   cmake -DMPIEXEC=mpiexec -DEXE=path/to/shard_stall -DDIR=parent/dir -P check_shard_stall.cmake
cmake_minimum_required(VERSION 3.20)

if(NOT EXE OR NOT MPIEXEC OR NOT DIR)
  message(FATAL_ERROR "check_shard_stall: pass -DMPIEXEC=<mpiexec> -DEXE=<shard_stall> -DDIR=<parent directory>")
endif()
set(parent "${DIR}/shard-stall-quick")
file(REMOVE_RECURSE "${parent}")
file(MAKE_DIRECTORY "${parent}")

function(run_bench out_var rc_var err_var)
  execute_process(COMMAND ${MPIEXEC} -n 2 --oversubscribe ${EXE} --quick --dir ${parent} ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

function(expect_words who out)
  foreach(word IN LISTS ARGN)
    string(FIND "${out}" "${word}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "check_shard_stall: ${who}: no '${word}' in the output:\n${out}")
    endif()
  endforeach()
endfunction()

function(expect_removed who)
  file(GLOB left "${parent}/*")
  if(left)
    message(FATAL_ERROR "check_shard_stall: ${who}: the bench left ${left} behind")
  endif()
endfunction()

run_bench(out rc err)
string(FIND "${err}" "needs MPI_THREAD_MULTIPLE" refused)
if(rc EQUAL 1 AND NOT refused EQUAL -1)
  message(STATUS "check_shard_stall: this MPI library lacks MPI_THREAD_MULTIPLE; the bench said so:\n${err}")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_shard_stall: '${EXE} --quick' exited ${rc}:\n${out}\n${err}")
else()
  expect_words("--quick" "${out}" "rank 0\n" "rank 1\n" "copy (reference)" "async save step: stall"
               "sync save step: stall" "async stall / copy (time)" "bytes per rank" "(goal: median <= 1.20)")
  include(${CMAKE_CURRENT_LIST_DIR}/goal_lines.cmake)
  check_goal_lines(check_shard_stall "${out}" async_stall_vs_copy)
  expect_removed("--quick")
endif()

run_bench(out rc err --sync-only)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_shard_stall: '${EXE} --quick --sync-only' exited ${rc}:\n${out}\n${err}")
endif()
expect_words("--sync-only" "${out}" "sync save step: stall" "sync stall / copy (time)" "not measured: --sync-only")
string(FIND "${out}" "goal async_stall_vs_copy" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "check_shard_stall: --sync-only printed the async goal line:\n${out}")
endif()
expect_removed("--sync-only")
file(REMOVE_RECURSE "${parent}")
