# ctest driver for cpp_trainer (the C++17 wrapper example). Usage:
#   cmake -DEXE=<cpp_trainer> -DWORK_DIR=<dir> -P check_cpp_trainer.cmake
#
# A run interrupted at step 120 and resumed to step 200 on the same
# checkpoint directory says where it resumed, prints the result line of an
# uninterrupted 200-step run and leaves a byte-identical final checkpoint.

foreach(var EXE WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_cpp_trainer: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# run(<expected exit status> <args>...): sets OUT, ERR.
function(run expected)
  execute_process(COMMAND "${EXE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY "${WORK_DIR}")
  if(NOT rc STREQUAL "${expected}")
    message(FATAL_ERROR "cpp_trainer ${ARGN}: exit status '${rc}', expected ${expected}\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
  set(OUT "${out}" PARENT_SCOPE)
  set(ERR "${err}" PARENT_SCOPE)
endfunction()

function(expect_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for '${regex}' in:\n${text}")
  endif()
endfunction()

# result_line(<var> <step>): the "result:" line of OUT, which must be for <step>.
function(result_line var step)
  if(NOT OUT MATCHES "\nresult: step=${step} eval_loss=[0-9]+\\.[0-9]+ w_error=[0-9]+\\.[0-9]+\n$")
    message(FATAL_ERROR "no 'result: step=${step} ...' line in:\n${OUT}")
  endif()
  string(REGEX MATCH "result: [^\n]*" line "${OUT}")
  set(${var} "${line}" PARENT_SCOPE)
endfunction()

run(0 --help)
expect_match("${OUT}" "^usage: cpp_trainer" "--help")
foreach(args IN ITEMS "--bogus" "--steps" "--steps;-1" "--steps;12x" "--lr;0" "--lr;nan" "--checkpoint-dir=")
  run(2 ${args})
endforeach()

# Without a checkpoint directory: trains, logs through the lambda hook, converges.
run(0 --steps 300 --log-every 100)
expect_match("${OUT}" "^fresh start at step 0\n" "fresh start")
result_line(line 300)
expect_match("${ERR}" "step 100: loss = [0-9.]+\nstep 200: loss = [0-9.]+\nstep 300: loss = [0-9.]+\n" "loss log")
if(NOT line MATCHES "w_error=0\\.0[0-9]+$")
  message(FATAL_ERROR "did not converge: ${line}")
endif()

set(whole "${WORK_DIR}/whole")
set(parts "${WORK_DIR}/parts")
set(common --save-steps 50 --log-every 0 --seed 3)

run(0 --steps 200 --checkpoint-dir "${whole}" ${common})
expect_match("${OUT}" "^fresh start at step 0\n" "uninterrupted run")
result_line(expected 200)

run(0 --steps 120 --checkpoint-dir "${parts}" ${common})
expect_match("${OUT}" "^fresh start at step 0\n" "first part")
result_line(unused 120)
run(0 --steps 200 --checkpoint-dir "${parts}" ${common})
expect_match("${OUT}" "^resumed at step 120 from [^\n]*model\\.ckpt-120\n" "second part")
result_line(resumed 200)
if(NOT resumed STREQUAL expected)
  message(FATAL_ERROR "resumed run differs from the uninterrupted one:\n  ${expected}\n  ${resumed}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${whole}/model.ckpt-200.safetensors"
                        "${parts}/model.ckpt-200.safetensors" RESULT_VARIABLE same)
if(NOT same EQUAL 0)
  message(FATAL_ERROR "the final checkpoints of the resumed and the uninterrupted run differ")
endif()

# Resuming a finished run trains nothing more and prints the same result.
run(0 --steps 200 --checkpoint-dir "${parts}" ${common})
expect_match("${OUT}" "^resumed at step 200 from " "finished run")
result_line(again 200)
if(NOT again STREQUAL expected)
  message(FATAL_ERROR "a finished run resumed prints another result:\n  ${expected}\n  ${again}")
endif()
message(STATUS "cpp_trainer: ${expected}")
