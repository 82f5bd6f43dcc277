# ctest driver for what train_digits and digits_own_loop share through
# digits_common.c: the flags the other drivers leave untested, and the data
# loading. Usage:
#   cmake -DEXE=<train_digits|digits_own_loop> -DMODE=<flags|learning_rate|bad_data> -DWORK_DIR=<dir> -P check_digits_flags.cmake
#
# flags: -h; --data with a plain and a gzip-compressed file of the same rows
#   (same split, same result); --save-secs (a cadence shorter than a step
#   saves every step, a long one at the start and the end only); --keep;
#   train_digits' --early-stop-every; --metrics-log's flags.
# learning_rate: --lr-schedule piecewise, cosine with --warmup-steps and
#   exponential with --lr-staircase end at the rate they define; the rate
#   is the summary learning_rate; --lr-plateau reduces it; flags that do not
#   go together are refused.
# bad_data: each fault of a data file is named with the program, the file
#   and the line; nothing on stdout; exit status 1.
# run_flags: how a run reads and stops: by default one INFO line per
#   checkpoint and a steps/sec line at most every 10 s; --quiet prints the
#   result line alone; --verbose adds hooked's DEBUG lines; --time-limit
#   stops with the final checkpoint and says stop=time_limit; a bad
#   --stop-signals is refused.

foreach(var EXE MODE WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_digits_flags: ${var} is not set")
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

# expect_checkpoints(<dir> <steps>...): the checkpoints in <dir> are of exactly these steps.
function(expect_checkpoints dir)
  file(GLOB found RELATIVE "${dir}" "${dir}/model.ckpt-*.safetensors")
  set(steps)
  foreach(f IN LISTS found)
    string(REGEX REPLACE "^model\\.ckpt-([0-9]+)\\.safetensors$" "\\1" step "${f}")
    list(APPEND steps ${step})
  endforeach()
  list(SORT steps COMPARE NATURAL)
  if(NOT "${steps}" STREQUAL "${ARGN}")
    message(FATAL_ERROR "${name}: checkpoints of steps '${steps}' in ${dir}, expected '${ARGN}'")
  endif()
endfunction()

# Fifty rows: the pixels of a 0 with one pixel moved per row, labels 0..9.
set(rows "")
foreach(i RANGE 49)
  math(EXPR label "${i} % 10")
  math(EXPR pixel "${i} % 17")
  string(APPEND rows "0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,")
  string(APPEND rows "0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,${pixel},${label}\n")
endforeach()
set(row "0,0,5,13,9,1,0,0,0,0,13,15,10,15,5,0,0,3,15,2,0,11,8,0,0,4,12,0,0,8,8,0,0,5,8,0,0,9,8,0,0,4,11,0,1,12,7,0,0,2,14,5,10,12,0,0,0,0,6,13,10,0,0,0")

if(MODE STREQUAL "flags")
  run(0 -h)
  expect_match("${OUT}" "^usage: ${name} " "-h")

  # --data: a plain file and the same rows gzip-compressed train alike.
  file(WRITE "${WORK_DIR}/rows.csv" "${rows}")
  file(ARCHIVE_CREATE OUTPUT "${WORK_DIR}/rows.csv.gz" PATHS "${WORK_DIR}/rows.csv" FORMAT raw COMPRESSION GZip)
  set(small --steps 20 --batch 8 --log-every 0)
  run(0 --data "${WORK_DIR}/rows.csv" ${small})
  expect_match("${ERR}" "^${name}: ${WORK_DIR}/rows\\.csv: 40 training rows, 10 test rows\n" "--data plain")
  expect_match("${OUT}" "^result: step=20 loss=[0-9.]+ test_accuracy=[0-9.]+ stop=last_step\n$" "--data plain")
  set(plain "${OUT}")
  run(0 --data=${WORK_DIR}/rows.csv.gz ${small})
  expect_match("${ERR}" "^${name}: ${WORK_DIR}/rows\\.csv\\.gz: 40 training rows, 10 test rows\n" "--data gzip")
  if(NOT OUT STREQUAL plain)
    message(FATAL_ERROR "${name}: the same rows plain and gzip-compressed train differently:\n${plain}${OUT}")
  endif()

  # --save-secs: a cadence shorter than any step saves at every one; a long
  # one at the start and at the end only (as without --save-steps).
  run(0 --steps 5 --log-every 0 --checkpoint-dir "${WORK_DIR}/often" --save-secs 0.000001 --keep 0)
  expect_checkpoints("${WORK_DIR}/often" 0 1 2 3 4 5)
  run(0 --steps 5 --log-every 0 --checkpoint-dir "${WORK_DIR}/seldom" --save-secs 3600 --keep 0)
  expect_checkpoints("${WORK_DIR}/seldom" 0 5)
  # --keep: the newest N stay.
  run(0 --steps 500 --log-every 0 --checkpoint-dir "${WORK_DIR}/keep" --save-steps 100 --keep 2)
  expect_checkpoints("${WORK_DIR}/keep" 400 500)

  # --metrics-log's flags: a bad format, a path without a known suffix, and
  # the two flags without --metrics-log are usage errors (exit 2).
  run(2 --metrics-log m.csv --metrics-format xml)
  expect_match("${ERR}" "--metrics-format 'xml' is neither csv nor jsonl" "bad --metrics-format")
  run(2 --metrics-log m.txt)
  expect_match("${ERR}" "ends in neither .csv nor .jsonl: add --metrics-format" "no suffix")
  run(2 --metrics-every 5)
  expect_match("${ERR}" "--metrics-format and --metrics-every need --metrics-log" "without --metrics-log")
  run(2 --metrics-log m.csv --metrics-every 0)
  # --metrics-every 5 to step 20: rows 5, 10, 15, 20.
  run(0 --steps 20 --log-every 0 --metrics-log "${WORK_DIR}/m.csv" --metrics-every 5)
  file(STRINGS "${WORK_DIR}/m.csv" rows)
  list(LENGTH rows nrows)
  list(GET rows 4 last)
  if(NOT nrows EQUAL 5 OR NOT last MATCHES "^20,")
    message(FATAL_ERROR "${name}: --metrics-every 5 to step 20 wrote:\n${rows}")
  endif()

  if(name STREQUAL "train_digits")
    # --early-stop-every 50: the test loss is evaluated every 50 steps, so
    # the stop comes 2 evaluations (100 steps) after the best, after S / 50
    # evaluations.
    run(0 --lr 1.0 --early-stop-patience 2 --early-stop-every 50 --log-every 0)
    string(CONCAT stopped "Early stopping at step ([0-9]+): test_loss:0 did not improve by more than 0 "
                          "for 2 evaluations \\(best [0-9.]+ at step ([0-9]+)\\)\\.")
    # Matched here, not in expect_match(): CMAKE_MATCH_<n> is scoped to the function that matched.
    if(NOT ERR MATCHES "${stopped}")
      message(FATAL_ERROR "${name}: no early stop with --early-stop-every 50:\n${ERR}")
    endif()
    set(s "${CMAKE_MATCH_1}")
    set(b "${CMAKE_MATCH_2}")
    math(EXPR s_mod "${s} % 50")
    math(EXPR b_mod "${b} % 50")
    math(EXPR b2 "${b} + 100")
    math(EXPR n "${s} / 50")
    if(NOT s_mod EQUAL 0 OR NOT b_mod EQUAL 0 OR NOT s EQUAL b2)
      message(FATAL_ERROR "${name}: stopped at step ${s}, best at ${b}: expected multiples of 50, 100 apart")
    endif()
    expect_match("${ERR}" "${name}: early stopping: best test_loss [0-9.]+ at step ${b}, ${n} evaluations, " "summary")
    expect_match("${OUT}" "^result: step=${s} " "result")
  endif()

elseif(MODE STREQUAL "learning_rate")
  # --lr-schedule: the LearningRateHook writes the rate the step reads; the
  # programs say the last one. piecewise: 0.01 after step 200.
  set(small --steps 300 --log-every 0)
  run(0 ${small} --lr-schedule piecewise --lr-boundaries 100,200 --lr-values 0.5,0.1,0.01
      --summary-dir "${WORK_DIR}/pw")
  expect_match("${ERR}" "${name}: learning rate 0\\.01 at step 299, 0 reductions\n" "piecewise")
  expect_match("${OUT}" "^result: step=300 " "piecewise")
  # The rate is the summary learning_rate, in the summary directory's event file.
  file(GLOB events "${WORK_DIR}/pw/events.out.tfevents.*")
  list(LENGTH events nevents)
  if(NOT nevents EQUAL 1)
    message(FATAL_ERROR "${name}: ${nevents} event files in ${WORK_DIR}/pw, expected 1")
  endif()
  file(READ "${events}" bytes HEX)
  string(HEX "learning_rate" tag)
  string(FIND "${bytes}" "${tag}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${name}: no learning_rate summary in ${events}")
  endif()
  # cosine after a warmup of 100: the cosine's last step, 99 of 100, is
  # 0.1 (1 + cos(0.99 pi)) / 2 = 2.467e-05.
  run(0 --steps 200 --log-every 0 --lr-schedule cosine --warmup-steps 100)
  expect_match("${ERR}" "${name}: learning rate 2\\.467[0-9]*e-05 at step 199, 0 reductions\n" "cosine")
  # exponential, staircase: 0.1 * 0.5^floor(299 / 100) = 0.025.
  run(0 ${small} --lr-schedule exponential --lr-decay-steps 100 --lr-decay-rate 0.5 --lr-staircase)
  expect_match("${ERR}" "${name}: learning rate 0\\.025 at step 299, 0 reductions\n" "exponential")
  # --lr-plateau: at --lr 0.5 the test loss stops improving, and the rate is
  # halved; each reduction is logged.
  run(0 --steps 1500 --log-every 0 --lr 0.5 --lr-plateau 2,0.5 --lr-plateau-every 100)
  expect_match("${ERR}" "LearningRateHook: test_loss(:0)? did not improve for 2 evaluations; learning rate reduced to "
               "plateau log")
  expect_match("${ERR}" "${name}: learning rate [0-9.e-]+ at step 1499, [1-9][0-9]* reductions\n" "plateau")
  # Flags that do not go together, and bad values: exit status 2, named.
  foreach(bad "--lr-values 1,2|--lr-boundaries and --lr-values need --lr-schedule piecewise"
              "--lr-schedule piecewise --lr-boundaries 5|needs --lr-boundaries B1,..,Bn and n \\+ 1 --lr-values"
              "--lr-schedule sometimes|--lr-schedule 'sometimes' is none of"
              "--lr-schedule exponential --lr-decay-rate 0.5|needs --lr-decay-rate and --lr-decay-steps"
              "--warmup-steps 10|--warmup-steps and --lr-alpha need --lr-schedule cosine"
              "--lr-plateau 2,1.5|invalid FACTOR '1.5' for --lr-plateau"
              "--lr-plateau-every 10|--lr-plateau-every needs --lr-plateau")
    string(REPLACE "|" ";" parts "${bad}")
    list(GET parts 0 args)
    list(GET parts 1 msg)
    separate_arguments(args)
    run(2 ${args})
    expect_match("${ERR}" "${msg}" "${args}")
  endforeach()
elseif(MODE STREQUAL "run_flags")
  set(ck --checkpoint-dir "${WORK_DIR}/ck" --save-steps 100 --steps 300 --log-every 0 --no-progress)
  if(name STREQUAL "digits_own_loop")
    list(REMOVE_ITEM ck --no-progress)
  endif()
  run(0 ${ck})
  string(REGEX MATCHALL "Saving checkpoints for [0-9]+" saves "${ERR}")
  list(LENGTH saves nsaves)
  if(NOT nsaves EQUAL 4 OR ERR MATCHES "Calling checkpoint listeners")
    message(FATAL_ERROR "${name}: expected one line per checkpoint (0, 100, 200, 300):\n${ERR}")
  endif()
  string(REGEX MATCHALL "global_step/sec: " rates "${ERR}")
  list(LENGTH rates nrates)
  if(nrates GREATER 1) # 300 quick steps: the first rate, then at most one every 10 s
    message(FATAL_ERROR "${name}: ${nrates} steps/sec lines for 300 steps:\n${ERR}")
  endif()
  expect_match("${OUT}" "^result: step=300 loss=[0-9.]+ test_accuracy=[0-9.]+ stop=last_step\n$" "default")

  file(REMOVE_RECURSE "${WORK_DIR}/ck")
  run(0 ${ck} --quiet)
  if(NOT ERR STREQUAL "")
    message(FATAL_ERROR "${name}: --quiet wrote to stderr:\n${ERR}")
  endif()
  expect_match("${OUT}" "^result: step=300 loss=[0-9.]+ test_accuracy=[0-9.]+ stop=last_step\n$" "--quiet")

  file(REMOVE_RECURSE "${WORK_DIR}/ck")
  run(0 ${ck} --verbose)
  expect_match("${ERR}" "Calling checkpoint listeners before saving checkpoint 100" "--verbose")

  # --time-limit: a limit shorter than any step stops after the first one,
  # with the final checkpoint of that step.
  file(REMOVE_RECURSE "${WORK_DIR}/ck")
  run(0 --checkpoint-dir "${WORK_DIR}/ck" --steps 100000 --log-every 0 --time-limit 0.000001)
  if(NOT OUT MATCHES "^result: step=([0-9]+) loss=[0-9.]+ test_accuracy=[0-9.]+ stop=time_limit\n$")
    message(FATAL_ERROR "${name}: --time-limit: no 'stop=time_limit' result line:\n${OUT}${ERR}")
  endif()
  set(s "${CMAKE_MATCH_1}")
  if(NOT EXISTS "${WORK_DIR}/ck/model.ckpt-${s}.safetensors")
    message(FATAL_ERROR "${name}: --time-limit: no final checkpoint of step ${s}")
  endif()
  expect_match("${ERR}" "stopped at step ${s}: time limit \\(Time limit of 1e-06 s reached" "--time-limit")

  run(2 --stop-signals INT,BOGUS)
  expect_match("${ERR}" "invalid value 'INT,BOGUS' for --stop-signals" "--stop-signals")
  run(2 --time-limit 0)
  expect_match("${ERR}" "invalid value '0' for --time-limit" "--time-limit 0")

elseif(MODE STREQUAL "bad_data")
  set(missing "${WORK_DIR}/no-such-file.csv.gz")
  run(1 --data "${missing}")
  expect_match("${ERR}" "^${name}: cannot open data file '${missing}': " "missing file")
  foreach(case IN ITEMS "fields" "pixel" "label" "junk" "long" "empty" "few")
    set(file "${WORK_DIR}/${case}.csv")
    if(case STREQUAL "fields")
      set(bad "${row}")
      set(msg "3: malformed data: expected 65 comma-separated fields, found 64")
    elseif(case STREQUAL "pixel")
      string(REGEX REPLACE "^0,0,5" "0,0,17" bad "${row},1")
      set(msg "3: malformed data: pixel value 17 in field 3 is outside 0\\.\\.16")
    elseif(case STREQUAL "label")
      set(bad "${row},10")
      set(msg "3: malformed data: label 10 in field 65 is outside 0\\.\\.9")
    elseif(case STREQUAL "junk")
      set(bad "${row},1,")
      set(msg "3: malformed data: more than 65 fields")
    elseif(case STREQUAL "long")
      string(REPEAT "1" 1100 bad)
      set(msg "3: malformed data: line longer than 1022 bytes")
    endif()
    if(case STREQUAL "empty")
      file(WRITE "${file}" "")
      set(msg " malformed data: no rows")
    elseif(case STREQUAL "few")
      file(WRITE "${file}" "${row},1\n${row},2\n${row},3\n")
      set(msg " 2 training rows, fewer than --batch 32")
    else()
      file(WRITE "${file}" "${row},1\n${row},2\n${bad}\n${row},3\n")
    endif()
    run(1 --data "${file}")
    expect_match("${ERR}" "^${name}: ${file}:${msg}\n$" "${case}")
    if(NOT OUT STREQUAL "")
      message(FATAL_ERROR "${name}: ${case}: printed on stdout:\n${OUT}")
    endif()
  endforeach()

else()
  message(FATAL_ERROR "check_digits_flags: unknown MODE '${MODE}'")
endif()
