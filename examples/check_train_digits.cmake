# ctest driver for train_digits. Usage:
#   cmake -DEXE=<train_digits> -DMODE=<default|short|resume|nan|early_stop|bad_flags|bad_data> -DWORK_DIR=<dir>
#         -P check_train_digits.cmake

foreach(var EXE MODE WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_train_digits: ${var} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# run(<expected exit status> <args>...): sets OUT, ERR.
function(run expected)
  execute_process(COMMAND "${EXE}" ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY "${WORK_DIR}")
  if(NOT rc STREQUAL "${expected}")
    message(FATAL_ERROR "train_digits ${ARGN}: exit status '${rc}', expected ${expected}\n"
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
  # Matched here, not in expect_match(): CMAKE_MATCH_<n> is scoped to the function that matched.
  if(NOT OUT MATCHES "^result: step=${step} loss=${num} test_accuracy=([0-9]+\\.[0-9]+) stop=[a-z_:A-Z0-9]+\n$")
    message(FATAL_ERROR "no 'result: step=${step} loss=<x> test_accuracy=<y>' line in:\n${OUT}")
  endif()
  set(LOSS "${CMAKE_MATCH_1}" PARENT_SCOPE)
  set(ACC "${CMAKE_MATCH_2}" PARENT_SCOPE)
endfunction()

set(row "0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0")

if(MODE STREQUAL "default")
  # The issue's acceptance: default flags, 3000 steps, test accuracy >= 0.95.
  run(0)
  check_result(3000)
  if(LOSS STREQUAL "nan" OR NOT ACC GREATER_EQUAL 0.95)
    message(FATAL_ERROR "loss ${LOSS}, test accuracy ${ACC}: expected a finite loss and accuracy >= 0.95\n${ERR}")
  endif()
  expect_match("${ERR}" "step 3000: loss = [0-9]" "loss log")
  expect_match("${ERR}" "training time: [0-9.]+ s for 3000 steps" "timing line")
  message(STATUS "train_digits: loss ${LOSS}, test accuracy ${ACC}")

elseif(MODE STREQUAL "short")
  run(0 --help)
  expect_match("${OUT}" "usage: train_digits" "--help")
  # --steps is the last global step (StopAtStep); the loss is logged every --log-every steps.
  run(0 --steps=200 --log-every 100 --batch 16 --lr 0.05 --seed 7)
  check_result(200)
  expect_match("${ERR}" "step 100: loss = [0-9.]+\nstep 200: loss = [0-9.]+\n" "loss log")
  if(ERR MATCHES "step 300:")
    message(FATAL_ERROR "ran past --steps:\n${ERR}")
  endif()
  # Same seed, same run: the data order and initialization are pure functions of --seed.
  set(first "${OUT}")
  run(0 --steps 200 --log-every 0 --batch 16 --lr 0.05 --seed 7)
  if(NOT OUT STREQUAL first)
    message(FATAL_ERROR "two runs with the same flags differ:\n${first}${OUT}")
  endif()
  if(ERR MATCHES "step [0-9]+: loss")
    message(FATAL_ERROR "--log-every 0 still logged:\n${ERR}")
  endif()
  # --steps 0 (last step 0) stops before the first step; the untrained model is still evaluated.
  run(0 --steps 0)
  check_result(0)
  # stderr is not a terminal here: no progress line unless asked for; --progress
  # draws plain lines (one per redraw) and a final one; the result is the same.
  if(ERR MATCHES "steps/s")
    message(FATAL_ERROR "a progress line without --progress on a pipe:\n${ERR}")
  endif()
  run(0 --steps 200 --log-every 0 --batch 16 --lr 0.05 --seed 7 --progress)
  check_result(200)
  if(NOT OUT STREQUAL first)
    message(FATAL_ERROR "--progress changed the result:\n${first}${OUT}")
  endif()
  string(CONCAT final "\nstep 200/200 \\(100.0%\\)  done in [0-9:]+  [0-9.]+ steps/s avg  loss [0-9.]+\n")
  expect_match("${ERR}" "${final}" "--progress")
  string(ASCII 13 27 cr_esc)
  if(ERR MATCHES "[${cr_esc}]")
    message(FATAL_ERROR "--progress on a pipe redrew in place:\n${ERR}")
  endif()
  run(0 --steps 200 --log-every 0 --batch 16 --lr 0.05 --seed 7 --progress --no-progress)
  if(ERR MATCHES "steps/s")
    message(FATAL_ERROR "--no-progress still drew:\n${ERR}")
  endif()

elseif(MODE STREQUAL "resume")
  # A run resumed from a checkpoint reaches bit-identical variables to an
  # uninterrupted run: the final checkpoints (same variables, same step) are
  # byte-identical files, and the result lines are equal.
  foreach(flags IN ITEMS "sync" "async")
    set(extra)
    if(flags STREQUAL "async")
      set(extra --async)
    endif()
    set(whole "${WORK_DIR}/${flags}-whole")
    set(parts "${WORK_DIR}/${flags}-parts")
    run(0 --steps 900 --log-every 0 --checkpoint-dir "${whole}" --save-steps 200 --keep 3 ${extra})
    check_result(900)
    set(expected "${OUT}")
    run(0 --steps 350 --log-every 0 --checkpoint-dir "${parts}" --save-steps 200 --keep 3 ${extra})
    check_result(350)
    run(0 --steps 900 --log-every 0 --checkpoint-dir "${parts}" --save-steps 200 --keep 3 ${extra})
    check_result(900)
    expect_match("${ERR}" "Restoring parameters from [^\n]*model.ckpt-350" "${flags}: restore at start")
    if(NOT OUT STREQUAL expected)
      message(FATAL_ERROR "${flags}: resumed run differs from the uninterrupted one:\n${expected}${OUT}")
    endif()
    file(SHA256 "${whole}/model.ckpt-900.safetensors" h1)
    file(SHA256 "${parts}/model.ckpt-900.safetensors" h2)
    if(NOT h1 STREQUAL h2)
      message(FATAL_ERROR "${flags}: final checkpoints differ between the resumed and the uninterrupted run")
    endif()
    # --keep 3: exactly three checkpoints remain, the state file lists them.
    file(GLOB kept RELATIVE "${parts}" "${parts}/model.ckpt-*.safetensors")
    list(LENGTH kept n)
    if(NOT n EQUAL 3)
      message(FATAL_ERROR "${flags}: --keep 3 left ${n} checkpoints: ${kept}")
    endif()
    file(READ "${parts}/checkpoint" state)
    expect_match("${state}" "^# hooked-crc32c: [0-9a-f]+\n(# hooked-pending-deletion: \"[^\"]+\"\n)*model_checkpoint_path: \"model.ckpt-900\"\n" "${flags}: state file")
  endforeach()
  # A finished run resumed with the same --steps trains nothing more.
  run(0 --steps 900 --log-every 0 --checkpoint-dir "${WORK_DIR}/sync-whole" --save-steps 200 --keep 3)
  check_result(900)
  expect_match("${ERR}" "training time: [0-9.]+ s for 0 steps" "no extra steps")

elseif(MODE STREQUAL "nan")
  # A learning rate that makes the weights overflow: the NaN guard (a
  # NanTensorHook in fail mode, before the checkpoint saver) fails the step
  # that diverged: exit 1, a clear message, no result line, and the
  # checkpoint of the step before it stays the newest. The loss the guard
  # watches is guarded by the updated weights, so the step whose update
  # overflowed is caught, not the one after it.
  foreach(flags IN ITEMS "plain" "ckpt" "summaries" "async")
    set(dir "${WORK_DIR}/${flags}")
    set(extra)
    if(flags STREQUAL "ckpt")
      set(extra --checkpoint-dir "${dir}" --save-steps 1)
    elseif(flags STREQUAL "summaries")
      set(extra --checkpoint-dir "${dir}" --save-steps 1 --summary-dir "${dir}/summaries")
    elseif(flags STREQUAL "async")
      set(extra --checkpoint-dir "${dir}" --save-steps 1 --async)
    endif()
    run(1 --lr 1e30 --log-every 1 ${extra})
    if(NOT OUT STREQUAL "")
      message(FATAL_ERROR "${flags}: a diverged run printed a result:\n${OUT}")
    endif()
    expect_match("${ERR}" "E hooked\\] Model diverged with loss = NaN\\." "${flags}: the guard's log")
    expect_match("${ERR}" "train_digits: training step: INVALID_ARGUMENT: NaN loss during training\\."
                 "${flags}: error")
    expect_match("${ERR}" "train_digits: training diverged at step 2: the loss or the weights are no longer finite"
                 "${flags}: divergence")
    # The step that diverged is never reported as done.
    if(ERR MATCHES "step 2: loss")
      message(FATAL_ERROR "${flags}: step 2 was logged as a step that ran:\n${ERR}")
    endif()
    if(NOT flags STREQUAL "plain")
      file(GLOB later "${dir}/model.ckpt-[2-9]*")
      if(later)
        message(FATAL_ERROR "${flags}: a checkpoint of the diverged step or later: ${later}")
      endif()
      file(READ "${dir}/checkpoint" state)
      if(flags STREQUAL "async")
        # The save of step 1 is deferred behind the one of step 0 when the
        # writer is still busy, or not when it was quick: 0 or 1 is
        # the newest, never the diverged step (checked above).
        set(newest "[01]")
      else()
        set(newest 1)
      endif()
      expect_match("${state}" "^# hooked-crc32c: [0-9a-f]+\n(# hooked-pending-deletion: \"[^\"]+\"\n)*model_checkpoint_path: \"model.ckpt-${newest}\"\n" "${flags}: state file")
      expect_match("${ERR}" "train_digits: the newest checkpoint is the last good one: [^\n]*model.ckpt-${newest}\n"
                   "${flags}: newest checkpoint")
    endif()
  endforeach()

elseif(MODE STREQUAL "early_stop")
  # --early-stop-patience 3: an EarlyStoppingHook on test_loss:0, evaluated
  # every 100 steps. At --lr 1.0 the test loss bottoms out early (at step 600
  # with gcc on x86-64), so three evaluations without improvement stop
  # training at S = best + 300, long before 3000 (exit 0, a result line).
  set(flags --lr 1.0 --early-stop-patience 3 --log-every 0)
  run(0 ${flags})
  string(CONCAT stopped "Early stopping at step ([0-9]+)00: test_loss:0 did not improve by more than 0 "
                        "for 3 evaluations \\(best [0-9.]+ at step ([0-9]+)00\\)\\.")
  if(NOT ERR MATCHES "${stopped}")
    message(FATAL_ERROR "no early stop:\n${ERR}")
  endif()
  set(s "${CMAKE_MATCH_1}")
  set(b "${CMAKE_MATCH_2}")
  math(EXPR b3 "${b} + 3")
  if(NOT s EQUAL b3 OR s GREATER 25)
    message(FATAL_ERROR "stopped at step ${s}00 with the best at ${b}00: expected best + 300, before 2500")
  endif()
  set(stop "${s}00")
  string(CONCAT stop_log "Early stopping at step ${stop}: test_loss:0 did not improve by more than 0 "
                         "for 3 evaluations \\(best [0-9.]+ at step ${b}00\\)\\.")
  string(CONCAT summary "train_digits: early stopping: best test_loss [0-9.]+ at step ${b}00, ${s} evaluations, "
                        "the last 3 without improvement; stopped\n")
  check_result(${stop})
  set(expected "${OUT}")
  expect_match("${ERR}" "${summary}" "the trainer's summary")
  # The hook's state is in every checkpoint: a run stopped 150 steps before
  # and resumed stops at the same step, with a final checkpoint
  # byte-identical to the uninterrupted run's (the state variable included).
  run(0 ${flags} --checkpoint-dir "${WORK_DIR}/whole" --save-steps 100)
  if(NOT OUT STREQUAL expected)
    message(FATAL_ERROR "checkpoints changed the result:\n${expected}${OUT}")
  endif()
  math(EXPR part "${stop} - 150")
  run(0 ${flags} --checkpoint-dir "${WORK_DIR}/parts" --save-steps 100 --steps ${part})
  check_result(${part})
  run(0 ${flags} --checkpoint-dir "${WORK_DIR}/parts" --save-steps 100)
  expect_match("${ERR}" "Restoring parameters from [^\n]*model.ckpt-${part}" "restore at ${part}")
  expect_match("${ERR}" "${stop_log}" "resumed: the hook's stop")
  expect_match("${ERR}" "${summary}" "resumed: the trainer's summary")
  if(NOT OUT STREQUAL expected)
    message(FATAL_ERROR "resumed run differs from the uninterrupted one:\n${expected}${OUT}")
  endif()
  file(SHA256 "${WORK_DIR}/whole/model.ckpt-${stop}.safetensors" h1)
  file(SHA256 "${WORK_DIR}/parts/model.ckpt-${stop}.safetensors" h2)
  if(NOT h1 STREQUAL h2)
    message(FATAL_ERROR "the final checkpoints of the resumed and the uninterrupted run differ")
  endif()
  # Restarted after it stopped: it stops again before the first step.
  run(0 ${flags} --checkpoint-dir "${WORK_DIR}/whole" --save-steps 100)
  check_result(${stop})
  expect_match("${ERR}" "Early stopping already reached at step ${stop}: [^\n]*stopping before the first step\\."
               "restart after the stop")
  expect_match("${ERR}" "training time: [0-9.]+ s for 0 steps" "no step after the stop")
  # A checkpoint written without the flag has no state: it restores (the
  # variable is optional, a WARNING names it) and the count starts there.
  run(0 --lr 1.0 --log-every 0 --checkpoint-dir "${WORK_DIR}/old" --save-steps 100 --steps 300)
  run(0 ${flags} --checkpoint-dir "${WORK_DIR}/old" --save-steps 100)
  expect_match("${ERR}" "W hooked\\] Variable early_stopping is not in checkpoint [^\n]*model.ckpt-300; it is optional"
               "old checkpoint")
  if(b GREATER 3)
    # Same weights from step 300 on: the same stop, evaluations from 400 on.
    check_result(${stop})
    math(EXPR n "${s} - 3")
    string(CONCAT again "best test_loss [0-9.]+ at step ${b}00, ${n} evaluations, "
                        "the last 3 without improvement; stopped")
    expect_match("${ERR}" "${again}" "old checkpoint: evaluations from 400 on")
  endif()

elseif(MODE STREQUAL "bad_flags")
  foreach(args IN ITEMS "--bogus" "--steps" "--steps;abc" "--steps;-1" "--steps;12x" "--batch;0"
                        "--lr;0" "--lr;nan" "--lr;-0.1" "--seed;-3" "--log-every;-1" "extra" "--data="
                        "--save-steps;5" "--async" "--keep;2" "--checkpoint-dir=" "--checkpoint-dir;d;--save-steps;0"
                        "--checkpoint-dir;d;--save-secs;-1" "--checkpoint-dir;d;--keep;-1"
                        "--checkpoint-dir;d;--save-steps;5;--save-secs;5" "--summary-dir=" "--summary-dir"
                        "--profile-dir=" "--profile-steps;5" "--profile-dir;d;--profile-steps;0"
                        "--profile-dir;d;--profile-steps;x" "--progress=1" "--early-stop-patience;0"
                        "--early-stop-every;5" "--early-stop-patience;2;--early-stop-every;0")
    run(2 ${args})
    list(GET args 0 flag)
    if(flag MATCHES "^--(checkpoint-dir|profile-dir|early-stop-patience)$" AND NOT args MATCHES "^--[a-z-]+=$"
       AND NOT args STREQUAL "--early-stop-patience;0")
      list(GET args 2 flag)
    endif()
    string(REGEX REPLACE "=.*" "" flag "${flag}")
    expect_match("${ERR}" "^train_digits: .*${flag}" "message for '${args}'")
    if(NOT OUT STREQUAL "")
      message(FATAL_ERROR "'${args}' printed on stdout:\n${OUT}")
    endif()
  endforeach()

elseif(MODE STREQUAL "bad_data")
  set(missing "${WORK_DIR}/no-such-file.csv.gz")
  run(1 --data "${missing}")
  expect_match("${ERR}" "cannot open data file '${missing}'" "missing file")

  # gzopen reads plain text transparently, so the faulty files need no gzip.
  foreach(case IN ITEMS "fields" "pixel" "label" "junk" "empty" "few")
    set(file "${WORK_DIR}/${case}.csv")
    set(expect_line 3)
    if(case STREQUAL "fields")
      set(bad "${row}")
      set(msg "expected 65 comma-separated fields, found 64")
    elseif(case STREQUAL "pixel")
      string(REGEX REPLACE "^0,0,5" "0,0,17" bad "${row}")
      set(bad "${bad},1")
      set(msg "pixel value 17 in field 3 is outside 0..16")
    elseif(case STREQUAL "label")
      set(bad "${row},10")
      set(msg "label 10 in field 65 is outside 0..9")
    elseif(case STREQUAL "junk")
      set(bad "${row},x")
      set(msg "field 65 is not a non-negative integer")
    endif()
    if(case STREQUAL "empty")
      file(WRITE "${file}" "")
      run(1 --data "${file}")
      expect_match("${ERR}" "${case}.csv: malformed data: no rows" "${case}")
    elseif(case STREQUAL "few")
      file(WRITE "${file}" "${row},1\n${row},2\n${row},3\n")
      run(1 --data "${file}")
      expect_match("${ERR}" "${case}.csv: 2 training rows, fewer than --batch 32" "${case}")
    else()
      file(WRITE "${file}" "${row},1\n${row},2\n${bad}\n${row},3\n")
      run(1 --data "${file}")
      expect_match("${ERR}" "${case}.csv:${expect_line}: malformed data: ${msg}" "${case}")
    endif()
    if(NOT OUT STREQUAL "")
      message(FATAL_ERROR "${case}: printed on stdout:\n${OUT}")
    endif()
  endforeach()

else()
  message(FATAL_ERROR "check_train_digits: unknown MODE '${MODE}'")
endif()
