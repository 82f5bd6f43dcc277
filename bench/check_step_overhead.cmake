# The step_overhead smoke test (ctest): a tiny run exits 0 (no timed loop
# allocated, no error) and prints a line for every case `--list` names,
# with its allocation count. Timings are not checked.
#   cmake -DEXE=path/to/step_overhead -P check_step_overhead.cmake
cmake_minimum_required(VERSION 3.20)

if(NOT EXE)
  message(FATAL_ERROR "check_step_overhead: pass -DEXE=<step_overhead>")
endif()

execute_process(COMMAND ${EXE} --list RESULT_VARIABLE rc OUTPUT_VARIABLE labels ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_step_overhead: '${EXE} --list' exited ${rc}: ${err}")
endif()
string(REPLACE "\n" ";" labels "${labels}")
list(FILTER labels EXCLUDE REGEX "^$")
list(LENGTH labels ncases)
if(ncases LESS 10)
  message(FATAL_ERROR "check_step_overhead: --list named ${ncases} cases, expected at least 10")
endif()

execute_process(COMMAND ${EXE} --iters 300 --rounds 3 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "check_step_overhead: the run exited ${rc} (1: a timed loop allocated or a case failed)\n"
                      "${out}\n${err}")
endif()
string(FIND "${out}" " iters=300 rounds=3 cases=${ncases} build_type=" at)
if(at EQUAL -1)
  message(FATAL_ERROR "check_step_overhead: no header line with iters, rounds and cases:\n${out}")
endif()
string(REPLACE "\n" ";" lines "${out}")
foreach(label IN LISTS labels)
  set(found OFF)
  foreach(line IN LISTS lines)
    string(FIND "${line}" "${label} " at)
    # A case line: the label at the start, then the figures, ending with
    # the allocation count (0: the run exited 0).
    if(at EQUAL 0 AND line MATCHES " 0$")
      set(found ON)
      break()
    endif()
  endforeach()
  if(NOT found)
    message(FATAL_ERROR "check_step_overhead: no line for case '${label}':\n${out}")
  endif()
endforeach()
message(STATUS "check_step_overhead: ${ncases} cases printed")
