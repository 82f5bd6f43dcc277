# ctest driver for digits_own_loop. Usage:
#   cmake -DEXE=<digits_own_loop> -DMODE=<default|bad_flags|summaries|diverge> -DWORK_DIR=<dir>
#         [-DEVENTS=<hooked-events>] [-DCKPT=<hooked-ckpt>] -P check_own_loop.cmake
# The SIGKILL/resume and SIGTERM checks are in check_own_loop.sh.

foreach(var EXE MODE WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_own_loop: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# run(<expected exit status> <args>...): sets OUT, ERR.
function(run expected)
  execute_process(COMMAND "${EXE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY "${WORK_DIR}")
  if(NOT rc STREQUAL "${expected}")
    message(FATAL_ERROR "digits_own_loop ${ARGN}: exit status '${rc}', expected ${expected}\n"
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

# check_result(<step>): the single stdout line; sets LOSS, ACC.
function(check_result step)
  set(num "-?(nan|[0-9]+\\.[0-9]+)")
  if(NOT OUT MATCHES "^result: step=${step} loss=${num} test_accuracy=([0-9]+\\.[0-9]+) stop=[a-z_:A-Z0-9]+\n$")
    message(FATAL_ERROR "no 'result: step=${step} loss=<x> test_accuracy=<y>' line in:\n${OUT}")
  endif()
  set(LOSS "${CMAKE_MATCH_1}" PARENT_SCOPE)
  set(ACC "${CMAKE_MATCH_2}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "default")
  # Default flags: 3000 steps, no checkpoints; the accuracy train_digits reaches (>= 0.95).
  run(0)
  check_result(3000)
  if(LOSS STREQUAL "nan" OR NOT ACC GREATER_EQUAL 0.95)
    message(FATAL_ERROR "loss ${LOSS}, test accuracy ${ACC}: expected a finite loss and accuracy >= 0.95\n${ERR}")
  endif()
  expect_match("${ERR}" "step 3000: loss = [0-9]" "loss log")
  expect_match("${ERR}" "training time: [0-9.]+ s for 3000 steps" "timing line")
  message(STATUS "digits_own_loop: loss ${LOSS}, test accuracy ${ACC}")
  # --help, and the same flags give the same run (the initialization and
  # the batches are pure functions of --seed).
  run(0 --help)
  expect_match("${OUT}" "usage: digits_own_loop" "--help")
  run(0 --steps=200 --log-every 100 --batch 16 --lr 0.05 --seed 7)
  check_result(200)
  expect_match("${ERR}" "step 100: loss = [0-9.]+\nstep 200: loss = [0-9.]+\n" "loss log")
  set(first "${OUT}")
  run(0 --steps 200 --log-every 0 --batch 16 --lr 0.05 --seed 7)
  if(NOT OUT STREQUAL first)
    message(FATAL_ERROR "two runs with the same flags differ:\n${first}${OUT}")
  endif()
  # --steps 0 stops before the first step; the initial model is still evaluated.
  run(0 --steps 0)
  check_result(0)

elseif(MODE STREQUAL "summaries")
  # --summary-dir: loss and test_accuracy every 100 steps (hk_loop_summary_scalar)
  # and global_step/sec (a StepCounterHook among the loop's hooks) in one
  # event file of the directory; the result is that of a run without it.
  run(0 --steps 300 --log-every 0)
  set(plain "${OUT}")
  run(0 --steps 300 --log-every 0 --summary-dir "${WORK_DIR}/tb")
  check_result(300)
  if(NOT OUT STREQUAL plain)
    message(FATAL_ERROR "--summary-dir changed the result:\n${plain}${OUT}")
  endif()
  expect_match("${ERR}" "I hooked\\] global_step/sec: [0-9.]+" "the StepCounterHook's log")
  file(GLOB files "${WORK_DIR}/tb/events.out.tfevents.*")
  list(LENGTH files n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "--summary-dir wrote ${n} event files, expected one: ${files}")
  endif()
  if(EVENTS)
    execute_process(COMMAND "${EVENTS}" csv "${WORK_DIR}/tb" RESULT_VARIABLE rc OUTPUT_VARIABLE csv ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "hooked-events csv: exit ${rc}: ${err}")
    endif()
    string(REGEX REPLACE ",[0-9.e+]+,([^,\n]+)\n" ",\\1\n" rows "${csv}") # drop wall_time
    foreach(tag_step IN ITEMS "global_step/sec,101" "global_step/sec,201" "loss,100" "loss,200" "loss,300"
                              "test_accuracy,100" "test_accuracy,200" "test_accuracy,300")
      expect_match("${rows}" "\n${tag_step},[0-9.e-]+\n" "hooked-events csv: ${tag_step}")
    endforeach()
    string(REGEX MATCHALL "\n[a-z_/]+," tags "${rows}")
    list(LENGTH tags n)
    if(NOT n EQUAL 8)
      message(FATAL_ERROR "expected 8 scalars (2 global_step/sec, 3 loss, 3 test_accuracy):\n${csv}")
    endif()
  endif()

elseif(MODE STREQUAL "diverge")
  # A learning rate that makes the weights NaN at step 2, a checkpoint every
  # step and --keep 2: no guard in the program, yet no non-finite value is
  # checkpointed. The save of step 2 is refused, which fails the loop:
  # exit 1 with the refusal naming the array, no result line, and the newest
  # checkpoint is step 1's, finite, which verifies; none was rotated out by
  # a bad one. Synchronous and asynchronous saves alike: the writer thread's
  # refusal comes back at the next step ("Checkpoint for step N into ...
  # failed: ...") or, when every step ran while a write was in flight, from
  # the final save.
  foreach(flavour sync async)
    set(dir "${WORK_DIR}/${flavour}")
    set(extra)
    if(flavour STREQUAL "async")
      set(extra --async)
    endif()
    run(1 --lr 1e30 --steps 50 --log-every 0 --checkpoint-dir "${dir}" --save-steps 1 --keep 2 ${extra})
    if(NOT OUT STREQUAL "")
      message(FATAL_ERROR "${flavour}: a diverged run printed a result:\n${OUT}")
    endif()
    expect_match("${ERR}" "digits_own_loop: INVALID_ARGUMENT: (Checkpoint for step [0-9]+ into [^\n]* failed: )?Refusing to checkpoint a non-finite value: variable '[a-z0-9]+' holds (NaN|-?Inf) at element"
                 "${flavour}: the refusal")
    file(READ "${dir}/checkpoint" state)
    if(NOT state MATCHES "model_checkpoint_path: \"model.ckpt-([0-9]+)\"")
      message(FATAL_ERROR "${flavour}: no model_checkpoint_path in:\n${state}")
    endif()
    set(newest "${CMAKE_MATCH_1}")
    if(flavour STREQUAL "sync" AND NOT newest STREQUAL "1")
      message(FATAL_ERROR "sync: the newest checkpoint is ${newest}, not 1 (the last finite step):\n${state}")
    endif()
    if(DEFINED CKPT)
      execute_process(COMMAND "${CKPT}" verify --finite "${dir}" RESULT_VARIABLE rc OUTPUT_VARIABLE vout
                      ERROR_VARIABLE verr)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${flavour}: hooked-ckpt verify --finite ${dir} failed:\n${vout}${verr}")
      endif()
    endif()
  endforeach()

elseif(MODE STREQUAL "bad_flags")
  foreach(args IN ITEMS "--bogus" "--steps" "--steps;abc" "--steps;-1" "--steps;12x" "--batch;0"
                        "--lr;0" "--lr;nan" "--lr;-0.1" "--seed;-3" "--log-every;-1" "extra" "--data="
                        "--save-steps;5" "--async" "--keep;2" "--checkpoint-dir=" "--checkpoint-dir;d;--save-steps;0"
                        "--checkpoint-dir;d;--save-secs;-1" "--checkpoint-dir;d;--keep;-1"
                        "--checkpoint-dir;d;--save-steps;5;--save-secs;5" "--summary-dir=" "--summary-dir")
    run(2 ${args})
    list(GET args 0 flag)
    if(flag STREQUAL "--checkpoint-dir" AND NOT args STREQUAL "--checkpoint-dir=")
      list(GET args 2 flag)
    endif()
    string(REGEX REPLACE "=.*" "" flag "${flag}")
    expect_match("${ERR}" "^digits_own_loop: .*${flag}" "message for '${args}'")
    if(NOT OUT STREQUAL "")
      message(FATAL_ERROR "'${args}' printed on stdout:\n${OUT}")
    endif()
  endforeach()
  # The flags of --distributed and the optimizer, each refused before MPI
  # starts (a build without MPI refuses --distributed itself).
  foreach(case IN ITEMS "--optimizer;rmsprop@--optimizer 'rmsprop' is neither sgd nor adam"
                        "--zero1@--zero1 needs --distributed sync and --optimizer adam"
                        "--optimizer;adam;--zero1@--zero1 needs --distributed sync"
                        "--collective-timeout;5@--collective-timeout needs --distributed"
                        "--collective-timeout;0@invalid value '0' for --collective-timeout"
                        "--distributed;async@--distributed 'async' is not sync"
                        "--distributed;sync;--zero1@(--zero1 needs|.*without MPI)"
                        "--distributed;sync;--checkpoint-dir;d;--save-secs;5@(--save-secs: with|.*without MPI)"
                        "--distributed;sync;--summary-dir;s@.*(do not combine with --distributed|without MPI)")
    string(REPLACE "@" ";" parts "${case}")
    list(GET parts -1 message)
    list(REMOVE_AT parts -1)
    run(2 ${parts})
    expect_match("${ERR}" "^digits_own_loop: ${message}" "message for '${parts}'")
  endforeach()
  # Nothing was created for the rejected --checkpoint-dir d.
  if(EXISTS "${WORK_DIR}/d")
    message(FATAL_ERROR "a rejected command line created its checkpoint directory")
  endif()

else()
  message(FATAL_ERROR "check_own_loop: unknown MODE '${MODE}'")
endif()
