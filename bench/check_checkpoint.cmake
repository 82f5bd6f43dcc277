# The checkpoint bench's smoke test (ctest): `--quick` (every case at tiny
# sizes, 3 rounds) exits 0 and ends with the machine-readable goal lines,
# each present once and parsing: `goal NAME min=X median=Y max=Z` with
# min <= median <= max, and `goal fsyncs_per_save_with_retention value=N`.
# Their values are not checked: timings depend on the machine.
#   cmake -DEXE=path/to/checkpoint -DDIR=scratch/dir -P check_checkpoint.cmake
cmake_minimum_required(VERSION 3.20)

if(NOT EXE OR NOT DIR)
  message(FATAL_ERROR "check_checkpoint: pass -DEXE=<checkpoint> -DDIR=<a directory to write in>")
endif()
file(MAKE_DIRECTORY "${DIR}")
execute_process(COMMAND ${EXE} --quick --dir ${DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_checkpoint: '${EXE} --quick' exited ${rc}:\n${out}\n${err}")
endif()
foreach(word IN ITEMS "machine: " "CRC-32C: " "(1p) raw write, paced like hooked" "(6c) cold, chunked pread"
                      "(2k) hooked sync save, max_to_keep 5" "(2s) hooked sync save, a 64 KiB model"
                      "scaling by tensor count")
  string(FIND "${out}" "${word}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check_checkpoint: no '${word}' in the output:\n${out}")
  endif()
endforeach()
include(${CMAKE_CURRENT_LIST_DIR}/goal_lines.cmake)
check_goal_lines(check_checkpoint "${out}" restore_vs_warm_read restore_vs_cold_read save_vs_paced_write
                 small_save_vs_posix)
string(REGEX MATCHALL "\ngoal fsyncs_per_save_with_retention value=[0-9]+\n" lines "${out}")
list(LENGTH lines n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "check_checkpoint: ${n} lines 'goal fsyncs_per_save_with_retention value=N', expected one")
endif()
message(STATUS "check_checkpoint: every goal line printed and parsed")
