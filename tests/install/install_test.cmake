# Install-consumer test, run with `cmake -P` by ctest. It installs the
# current build into a fresh prefix under the build tree, then builds and
# runs tests/install/consumer: with find_package(hooked) against the
# prefix, with find_package(hooked) against the build tree, and with
# `cc $(pkg-config --cflags --libs hooked)`.
#
# Inputs (-D): HOOKED_BINARY_DIR, CONSUMER_DIR, WORK_DIR, CONFIG,
# GENERATOR, C_COMPILER, CXX_COMPILER, LIBDIR, SHARED, SANITIZE, PKG_CONFIG.

cmake_minimum_required(VERSION 3.20)

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN ARGN " " cmdline)
  message(STATUS "[${what}] ${cmdline}\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (exit ${rc})")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(config_args "")
if(CONFIG)
  set(config_args --config ${CONFIG})
endif()
run(install ${CMAKE_COMMAND} --install ${HOOKED_BINARY_DIR} --prefix ${prefix} ${config_args})

foreach(f include/hooked/hooked.h include/hooked/sys/hook.h include/hooked/sys/executor.h
          ${LIBDIR}/cmake/hooked/hookedConfig.cmake ${LIBDIR}/cmake/hooked/hookedConfigVersion.cmake
          ${LIBDIR}/cmake/hooked/hookedTargets.cmake ${LIBDIR}/pkgconfig/hooked.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install test: ${f} was not installed")
  endif()
endforeach()
file(READ ${prefix}/${LIBDIR}/pkgconfig/hooked.pc pc)
if(NOT pc MATCHES "prefix=${prefix}\n" OR NOT pc MATCHES "libdir=\\\${prefix}/")
  message(FATAL_ERROR "install test: hooked.pc does not use the install prefix:\n${pc}")
endif()

# A sanitized libhooked needs the sanitizer runtime in every program that
# links it, so the consumer is built with the same -fsanitize flags.
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()

set(build_type_arg "")
if(CONFIG)
  set(build_type_arg -DCMAKE_BUILD_TYPE=${CONFIG})
endif()

# consumer(<label> <build dir> <how to find hooked> <programs...>):
# configure and build the consumer project, then run the given programs.
function(consumer label dir find_arg)
  run(configure-${label} ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${dir} -G ${GENERATOR} ${find_arg}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
      "-DCMAKE_C_FLAGS=${flags}" "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}"
      ${build_type_arg})
  run(build-${label} ${CMAKE_COMMAND} --build ${dir} ${config_args} --target ${ARGN})
  foreach(prog ${ARGN})
    set(exe ${dir}/${prog})
    if(CONFIG AND EXISTS ${dir}/${CONFIG}/${prog}) # multi-config generators
      set(exe ${dir}/${CONFIG}/${prog})
    endif()
    run(${prog}-${label} ${exe})
  endforeach()
endfunction()

# 1. find_package(hooked CONFIG REQUIRED) against the installed prefix.
consumer(prefix ${WORK_DIR}/consumer-build -DCMAKE_PREFIX_PATH=${prefix}
         consumer_main consumer_custom_hook consumer_cpp_hook)

# 2. The build tree's export, without installing: -Dhooked_DIR=<build dir>.
consumer(build-tree ${WORK_DIR}/consumer-build-tree -Dhooked_DIR=${HOOKED_BINARY_DIR} consumer_main)

# 3. pkg-config, as a Makefile would use it.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "install test: pkg-config was not found; install it (apt-get install -y pkg-config)")
endif()
set(ENV{PKG_CONFIG_PATH} ${prefix}/${LIBDIR}/pkgconfig)
set(static "")
if(NOT SHARED)
  set(static --static)
endif()
run(pkg-config ${PKG_CONFIG} --cflags --libs ${static} hooked)
string(STRIP "${run_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
separate_arguments(san_flags UNIX_COMMAND "${flags}")
set(exe ${WORK_DIR}/consumer_pkgconfig)
run(cc ${C_COMPILER} -std=c11 -Wall -Wextra -Wpedantic -Werror ${san_flags}
    ${CONSUMER_DIR}/main.c -o ${exe} ${pc_flags})
# A shared libhooked is found through LD_LIBRARY_PATH, as pkg-config users
# outside the default library path do.
run(consumer_pkgconfig ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/${LIBDIR} ${exe})
