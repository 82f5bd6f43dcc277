# Subproject test, run with `cmake -P` by ctest: configures and builds
# tests/install/subproject, a project that add_subdirectory()s the hooked
# source tree, and checks that hooked contributed the library and nothing
# else: no tool, example, benchmark or test target, no ctest tests and no
# install rules; then runs the project's program.
#
# Inputs (-D): SOURCE_DIR, WORK_DIR, CONFIG, GENERATOR, C_COMPILER, CXX_COMPILER.

cmake_minimum_required(VERSION 3.20)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN ARGN " " cmdline)
  message(STATUS "[${what}] ${cmdline}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "subproject test: ${what} failed (exit ${rc})")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(dir ${WORK_DIR}/build)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(config_args "")
set(build_type_arg "")
if(CONFIG)
  set(config_args --config ${CONFIG})
  set(build_type_arg -DCMAKE_BUILD_TYPE=${CONFIG})
endif()

# No HOOKED_* option is given: the defaults are what is checked.
run(configure ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/subproject -B ${dir} -G ${GENERATOR}
    -DHOOKED_SOURCE_DIR=${SOURCE_DIR} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    ${build_type_arg})

# The targets the build system knows: the project's program and hooked's
# library (hooked_static, as BUILD_SHARED_LIBS is off; hooked::hooked is its
# alias), none of hooked's programs or test helpers.
run(targets ${CMAKE_COMMAND} --build ${dir} ${config_args} --target help)
set(targets "${run_output}")
foreach(wanted subproject_main hooked_static)
  if(NOT targets MATCHES "(^|[^A-Za-z0-9_-])${wanted}([^A-Za-z0-9_.-]|$)")
    message(FATAL_ERROR "subproject test: no target ${wanted} in:\n${targets}")
  endif()
endforeach()
foreach(unwanted hooked_ckpt hooked-ckpt train_digits step_overhead checkpoint make_checkpoint
                 hooked_test_support test_[a-z0-9_]+ fuzz_[a-z_]+)
  if(targets MATCHES "(^|[^A-Za-z0-9_-])(${unwanted})([^A-Za-z0-9_.-]|$)")
    message(FATAL_ERROR "subproject test: hooked added the target ${CMAKE_MATCH_2} to a project that "
                        "vendors it; as a subproject it builds the library only:\n${targets}")
  endif()
endforeach()

run(build ${CMAKE_COMMAND} --build ${dir} ${config_args} --parallel 2)

# Nothing built but the library and the program (the default target "all").
file(GLOB_RECURSE built LIST_DIRECTORIES false RELATIVE ${dir}
     ${dir}/*hooked-ckpt ${dir}/*train_digits ${dir}/*step_overhead ${dir}/*make_checkpoint ${dir}/*test_*)
list(FILTER built EXCLUDE REGEX "CMakeFiles/")
if(built)
  message(FATAL_ERROR "subproject test: hooked built programs as a subproject: ${built}")
endif()

# No tests: hooked's directories hold no CTestTestfile.cmake.
file(GLOB_RECURSE ctest_files ${dir}/CTestTestfile.cmake)
if(ctest_files)
  message(FATAL_ERROR "subproject test: hooked registered tests as a subproject: ${ctest_files}")
endif()

# No install rules: installing the project (which has none of its own)
# installs nothing.
set(prefix ${WORK_DIR}/prefix)
run(install ${CMAKE_COMMAND} --install ${dir} --prefix ${prefix} ${config_args})
file(GLOB_RECURSE installed ${prefix}/*)
if(installed)
  message(FATAL_ERROR "subproject test: hooked installed files as a subproject: ${installed}")
endif()

set(exe ${dir}/subproject_main)
if(CONFIG AND EXISTS ${dir}/${CONFIG}/subproject_main) # multi-config generators
  set(exe ${dir}/${CONFIG}/subproject_main)
endif()
run(subproject_main ${exe})
message(STATUS "subproject test: only the library was built, and the program linking it runs")
