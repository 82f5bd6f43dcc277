# ctest driver for the moving average and the best weights of train_digits
# and digits_own_loop (--ema, --ema-export, --best-k, --restore-best; contract
# H74-H77). Usage:
#   cmake -DEXE=<train_digits|digits_own_loop> -DHOOKED_CKPT=<hooked-ckpt>
#         -DWORK_DIR=<dir> -P check_averages.cmake
#
# --ema: the result line gains ema_test_accuracy; every checkpoint holds the
#   shadows of w1, b1, w2, b2 and the count; --ema-export writes a checkpoint
#   of the averages under the weights' own names, which hooked-ckpt verifies.
# --best-k --restore-best: with a learning rate that makes the test metric
#   worse after a while, the program reports the best checkpoint, which is
#   not the last one, and its result line's test accuracy is that of the
#   best weights (the same as training stopped at that step); without
#   --restore-best the last weights are evaluated.
# Bad combinations are usage errors (exit status 2) naming the flag.

foreach(var EXE HOOKED_CKPT WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_averages: ${var} is not set")
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

# ckpt(<args>...): hooked-ckpt, which must succeed; sets CKPT.
function(ckpt)
  execute_process(COMMAND "${HOOKED_CKPT}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "hooked-ckpt ${ARGN}: exit status ${rc}\n${out}${err}")
  endif()
  set(CKPT "${out}" PARENT_SCOPE)
endfunction()

set(quiet --log-every 0 --no-progress)
if(name STREQUAL "digits_own_loop")
  set(quiet --log-every 0)
endif()

# ---- --ema and --ema-export ---------------------------------------------------------
set(dir "${WORK_DIR}/ema")
run(0 --steps 300 ${quiet} --checkpoint-dir "${dir}" --save-steps 100 --ema 0.99 --ema-export "${WORK_DIR}/averages")
expect_match("${OUT}" "^result: step=300 loss=[0-9.]+ test_accuracy=[0-9.]+ ema_test_accuracy=[0-9.]+ stop=last_step\n$" "--ema")
ckpt(ls "${dir}/model.ckpt-300")
foreach(w w1 b1 w2 b2)
  expect_match("${CKPT}" "\n  ${w}/ExponentialMovingAverage +F32 " "the shadow of ${w} in checkpoint 300")
endforeach()
expect_match("${CKPT}" "\n  ExponentialMovingAverage/num_updates +I64 +\\[\\] " "the count in checkpoint 300")
ckpt(ls "${WORK_DIR}/averages")
expect_match("${CKPT}" "global step 300, [0-9]+ tensors" "the export")
foreach(w w1 b1 w2 b2)
  expect_match("${CKPT}" "\n  ${w} +F32 " "${w} in the export")
endforeach()
if(CKPT MATCHES "ExponentialMovingAverage")
  message(FATAL_ERROR "${name}: the export holds the hook's own tensors:\n${CKPT}")
endif()
ckpt(verify "${WORK_DIR}/averages")

# ---- --best-k and --restore-best --------------------------------------------------------
# --lr 1.5 trains fast, then diverges from its best test metric.
set(best_args --steps 600 ${quiet} --lr 1.5 --save-steps 100 --best-k 1)
run(0 ${best_args} --checkpoint-dir "${WORK_DIR}/last")
string(REGEX MATCH "test_accuracy=[0-9.]+" last "${OUT}")
run(0 ${best_args} --checkpoint-dir "${WORK_DIR}/best" --restore-best)
string(CONCAT restored "${name}: --restore-best: the weights are those of ${WORK_DIR}/best/model\\.ckpt-([0-9]+) "
                       "\\(test_[a-z]+ [0-9.]+\\)")
if(NOT ERR MATCHES "${restored}")
  message(FATAL_ERROR "${name}: no line naming the best checkpoint:\n${ERR}")
endif()
set(best_step "${CMAKE_MATCH_1}")
if(best_step EQUAL 600)
  message(FATAL_ERROR "${name}: the best checkpoint is the last one: the test does not test anything")
endif()
expect_match("${OUT}" "^result: step=600 " "--restore-best")
string(REGEX MATCH "test_accuracy=[0-9.]+" best "${OUT}")
# The best weights are those of a run stopped at that step.
run(0 --steps ${best_step} ${quiet} --lr 1.5 --save-steps 100 --checkpoint-dir "${WORK_DIR}/stopped")
string(REGEX MATCH "test_accuracy=[0-9.]+" stopped "${OUT}")
if(NOT best STREQUAL stopped)
  message(FATAL_ERROR "${name}: after --restore-best ${best}; training stopped at step ${best_step} gives ${stopped}")
endif()
if(last STREQUAL best)
  message(FATAL_ERROR "${name}: the last weights and the best ones evaluate alike (${last}): pick another --lr")
endif()

# ---- usage errors -------------------------------------------------------------------------
run(2 --restore-best --steps 1)
expect_match("${ERR}" "--restore-best needs --best-k" "--restore-best alone")
run(2 --best-k 2 --steps 1)
expect_match("${ERR}" "--best-k needs --checkpoint-dir" "--best-k alone")
run(2 --ema-export x --steps 1)
expect_match("${ERR}" "--ema-export needs --ema" "--ema-export alone")
run(2 --ema 0.9 --checkpoint-dir "${WORK_DIR}/async/" --async --ema-export "${WORK_DIR}/async/averages" --steps 1)
expect_match("${ERR}" "--ema-export cannot go into --checkpoint-dir with --async" "--ema-export beside --async")
run(2 --ema 1.5 --steps 1)
expect_match("${ERR}" "invalid value '1.5' for --ema: expected a decay in \\[0, 1\\]" "--ema 1.5")
