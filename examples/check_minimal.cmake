# ctest driver for the smallest trainers, examples/minimal. Usage:
#   cmake -DEXE=<minimal_host_loop|minimal_graph> -DWORK_DIR=<dir> [-DCKPT=<hooked-ckpt>] -P check_minimal.cmake
#
# Run as a newcomer runs them: without an argument (usage, exit 2); with a
# checkpoint directory that cannot be made (the library's message, exit 1);
# to the end, which fits y = 2x + 1 and logs the loss every 200 steps; then
# again on the same directory, which resumes at step 1000 and trains no
# more. hooked-ckpt verify then passes on the directory. (That a run stopped
# halfway resumes exactly is hooked-ckpt check-resume's test.)

foreach(var EXE WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_minimal: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
get_filename_component(name "${EXE}" NAME_WE)

# run(<expected exit status> <args>...): sets OUT, ERR.
function(run expected)
  execute_process(COMMAND "${EXE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY "${WORK_DIR}")
  if(NOT rc STREQUAL "${expected}")
    message(FATAL_ERROR "${name} ${ARGN}: exit status '${rc}', expected ${expected}\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()

function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${name}: ${what}: no match for '${regex}' in:\n${text}")
  endif()
endfunction()

run(2)
expect_match("${ERR}" "^usage: ${name} CHECKPOINT_DIR\n$" "no argument")

file(WRITE "${WORK_DIR}/a-file" "")
run(1 "${WORK_DIR}/a-file/ckpt")
expect_match("${ERR}" "(^|\n)${name}: FAILED_PRECONDITION: [^\n]*a-file[^\n]* not a directory\n" "a bad directory")
if(NOT OUT MATCHES "^(starting at step 0\n)?$")
  message(FATAL_ERROR "${name}: a failed run printed a result:\n${OUT}")
endif()

set(dir "${WORK_DIR}/ckpt")
set(fit "y = 2\\.0000 x \\+ 1\\.0000\n$")
run(0 "${dir}")
set(log "step 200: loss [0-9.e+-]+\nstep 400: loss [0-9.e+-]+\nstep 600: loss [0-9.e+-]+\nstep 800: loss [0-9.e+-]+\n")
string(APPEND log "step 1000: loss [0-9.e+-]+\n")
if(name STREQUAL "minimal_host_loop")
  expect_match("${OUT}" "^starting at step 0\n${log}${fit}" "the first run")
else()
  expect_match("${OUT}" "^${log}${fit}" "the first run")
endif()
set(first "${OUT}")

run(0 "${dir}")
expect_match("${ERR}" "Restoring parameters from [^\n]*model\\.ckpt-1000\n" "the second run restores")
if(name STREQUAL "minimal_host_loop")
  expect_match("${OUT}" "^starting at step 1000\n${fit}" "the second run")
else()
  expect_match("${OUT}" "^${fit}" "the second run")
endif()
string(REGEX MATCH "y = [^\n]*\n$" second "${OUT}")
string(REGEX MATCH "y = [^\n]*\n$" expected "${first}")
if(NOT second STREQUAL expected)
  message(FATAL_ERROR "${name}: the resumed run ends with another model:\n${first}${OUT}")
endif()

if(DEFINED CKPT)
  execute_process(COMMAND "${CKPT}" verify "${dir}" RESULT_VARIABLE rc OUTPUT_VARIABLE vout ERROR_VARIABLE verr)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name}: hooked-ckpt verify ${dir} failed:\n${vout}${verr}")
  endif()
  expect_match("${vout}" "OK +[^\n]*model\\.ckpt-1000\\.safetensors \\(global step 1000," "hooked-ckpt verify")
endif()
message(STATUS "${name}: ${expected}")
