# Install-consumer test, run with `cmake -P` by ctest. It installs the
# current build into a fresh prefix under the build tree, then builds and
# runs tests/install/consumer: with find_package(hooked) against the
# prefix, with find_package(hooked) against the build tree, and with the
# README's `cc main.c $(pkg-config --cflags --libs hooked) -o main`; then
# runs every installed program without LD_LIBRARY_PATH (RPATH).
#
# Inputs (-D): HOOKED_BINARY_DIR, CONSUMER_DIR, WORK_DIR, CONFIG,
# GENERATOR, C_COMPILER, CXX_COMPILER, LIBDIR, SHARED, SANITIZE, PKG_CONFIG,
# README, READELF, TOOLS (hooked-ckpt is built).

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

foreach(f include/hooked/hooked.h include/hooked/hooked.hpp include/hooked/loop.h include/hooked/sys/hook.h include/hooked/sys/executor.h
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
         consumer_main consumer_own_loop consumer_custom_hook consumer_cpp_hook)
# The README's host-loop program resumes: a second run starts at step 500.
run(own_loop-resume ${WORK_DIR}/consumer-build/consumer_own_loop ${WORK_DIR}/own_loop_ckpt)
run(own_loop-resume ${WORK_DIR}/consumer-build/consumer_own_loop ${WORK_DIR}/own_loop_ckpt)
if(NOT run_output MATCHES "starting at step 500\n")
  message(FATAL_ERROR "install test: the README's host-loop program did not resume at step 500:\n${run_output}")
endif()

# 2. The build tree's export, without installing: -Dhooked_DIR=<build dir>.
consumer(build-tree ${WORK_DIR}/consumer-build-tree -Dhooked_DIR=${HOOKED_BINARY_DIR} consumer_main)

# 3. pkg-config: the README's command, exactly as written there (between
#    its <!-- pkg-config-command --> markers), run by sh in a directory
#    holding main.c. The same plain line must work for the static (default)
#    and the shared library. `cc` is this build's C compiler with strict
#    warnings (and the sanitizer flags), found first on PATH.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "install test: pkg-config was not found; install it (apt-get install -y pkg-config)")
endif()
file(STRINGS ${README} readme_lines)
set(inside FALSE)
set(pc_command "")
foreach(line IN LISTS readme_lines)
  if(line STREQUAL "<!-- pkg-config-command -->")
    set(inside TRUE)
  elseif(line STREQUAL "<!-- /pkg-config-command -->")
    set(inside FALSE)
  elseif(inside AND NOT line MATCHES "^```")
    list(APPEND pc_command "${line}")
  endif()
endforeach()
list(LENGTH pc_command n)
if(NOT n EQUAL 1 OR NOT pc_command MATCHES "pkg-config --cflags --libs hooked")
  message(FATAL_ERROR "install test: README.md must hold one pkg-config line between its "
                      "<!-- pkg-config-command --> markers, found: ${pc_command}")
endif()
if(pc_command MATCHES "--static")
  message(FATAL_ERROR "install test: the README's pkg-config line must work without --static: ${pc_command}")
endif()

set(pc_dir ${WORK_DIR}/pkgconfig)
set(tool_dir ${WORK_DIR}/pkgconfig-bin)
file(MAKE_DIRECTORY ${pc_dir} ${tool_dir})
file(COPY ${CONSUMER_DIR}/main.c DESTINATION ${pc_dir})
file(WRITE ${tool_dir}/cc "#!/bin/sh\nexec '${C_COMPILER}' -std=c11 -Wall -Wextra -Wpedantic -Werror ${flags} \"$@\"\n")
file(WRITE ${tool_dir}/pkg-config "#!/bin/sh\nexec '${PKG_CONFIG}' \"$@\"\n")
file(CHMOD ${tool_dir}/cc ${tool_dir}/pkg-config PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
set(pc_env PATH=${tool_dir}:$ENV{PATH} PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig)
# Against a static libhooked the plain line carries what the library needs
# (glibc may resolve some of it without, so this is checked directly too).
run(pkg-config ${CMAKE_COMMAND} -E env ${pc_env} pkg-config --cflags --libs hooked)
if(NOT SHARED AND NOT run_output MATCHES "-lhooked -pthread -lm( |\n|$)")
  message(FATAL_ERROR "install test: a static hooked.pc must list -pthread -lm in Libs: ${run_output}")
endif()
run(readme-pkg-config ${CMAKE_COMMAND} -E chdir ${pc_dir} ${CMAKE_COMMAND} -E env ${pc_env} sh -c "${pc_command}")
# A shared libhooked is found through LD_LIBRARY_PATH, as pkg-config users
# outside the default library path do.
run(consumer_pkgconfig ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/${LIBDIR} ${pc_dir}/main)

# 4. The installed programs (hooked-ckpt, train_digits, whatever else lands
#    in bin/) start with LD_LIBRARY_PATH unset: a shared libhooked is found
#    through their $ORIGIN-relative RPATH, also after the prefix has moved.
#    Every installed program answers --help with exit status 0.
file(GLOB programs ${prefix}/bin/*)
if(TOOLS AND NOT EXISTS ${prefix}/bin/hooked-ckpt)
  message(FATAL_ERROR "install test: bin/hooked-ckpt was not installed")
endif()
set(moved ${WORK_DIR}/prefix-moved)
if(SHARED)
  if(NOT READELF)
    message(FATAL_ERROR "install test: readelf was not found (binutils)")
  endif()
  foreach(exe IN LISTS programs)
    execute_process(COMMAND ${READELF} -d ${exe} RESULT_VARIABLE rc OUTPUT_VARIABLE dyn)
    if(NOT rc EQUAL 0 OR NOT dyn MATCHES "\\(RUNPATH\\)|\\(RPATH\\)")
      message(FATAL_ERROR "install test: ${exe} has no RUNPATH:\n${dyn}")
    endif()
    if(NOT dyn MATCHES "\\[\\$ORIGIN/\\.\\./${LIBDIR}\\]" OR dyn MATCHES "${HOOKED_BINARY_DIR}")
      message(FATAL_ERROR "install test: the RUNPATH of ${exe} is not $ORIGIN/../${LIBDIR}:\n${dyn}")
    endif()
  endforeach()
  file(RENAME ${prefix} ${moved})
  set(prefix ${moved})
  file(GLOB programs ${prefix}/bin/*)
endif()
foreach(exe IN LISTS programs)
  get_filename_component(name ${exe} NAME)
  run(${name}-help ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${exe} --help)
endforeach()
