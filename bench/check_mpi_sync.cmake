# The MPI bench's smoke test (ctest): `mpi_sync --averaging-only --reps 2`
# under mpirun with 2 ranks exits 0, says that hk_mpi_average gave the same
# bits on every rank and called no MPI collective, and ends with the
# machine-readable goal lines, each present once and parsing:
# `goal NAME min=X median=Y max=Z` with min <= median <= max. The timing
# goals' values are not checked (they depend on the machine); the bytes per
# rank are arithmetic, not timing: within 5% of the ring bound.
#   cmake -DMPIEXEC=mpiexec -DEXE=path/to/mpi_sync -P check_mpi_sync.cmake
cmake_minimum_required(VERSION 3.20)

if(NOT EXE OR NOT MPIEXEC)
  message(FATAL_ERROR "check_mpi_sync: pass -DMPIEXEC=<mpiexec> -DEXE=<mpi_sync>")
endif()
execute_process(COMMAND ${MPIEXEC} -n 2 --oversubscribe ${EXE} --averaging-only --reps 2
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_mpi_sync: '${EXE} --averaging-only --reps 2' exited ${rc}:\n${out}\n${err}")
endif()
foreach(word IN ITEMS "same bits on every rank: yes" "no MPI collective called" "(D) fusion" "(E) overlap")
  string(FIND "${out}" "${word}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_mpi_sync: no '${word}' in the output:\n${out}")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/goal_lines.cmake)
check_goal_lines(check_mpi_sync "${out}" average_vs_allreduce_100KiB average_vs_allreduce_1MiB
                 average_vs_allreduce_16MiB bytes_per_rank_vs_ring fused_vs_per_array_calls overlap_hidden_share)
if(GOAL_bytes_per_rank_vs_ring_MIN LESS 0.95 OR GOAL_bytes_per_rank_vs_ring_MAX GREATER 1.05)
  message(FATAL_ERROR "check_mpi_sync: bytes per rank ${GOAL_bytes_per_rank_vs_ring_MIN}..\
${GOAL_bytes_per_rank_vs_ring_MAX} times the ring bound, not within 5%:\n${out}")
endif()
