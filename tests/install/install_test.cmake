# Install-consumer test, run with `cmake -P` by ctest. It installs the
# current build into fresh prefixes under the build tree and checks, in turn:
#
#  1. the install components: each holds what cmake/install.cmake says and
#     nothing else, together they are the full install, nothing is left in
#     the unnamed one, no example is installed and the LICENSE is;
#  2. tests/install/consumer built with find_package(hooked) against the
#     prefix on a machine view without MPI (CMAKE_DISABLE_FIND_PACKAGE_MPI):
#     hooked::hooked needs no MPI; the package, the header's version macros
#     and hk_version() agree;
#  3. the mpi component asked for both ways: found with MPI where hooked was
#     built with it (the program runs), refused with the reason where MPI
#     is hidden or hooked was built without it; an unknown component is
#     refused; a version request is met within the same minor only;
#  4. the build tree's export, without installing;
#  5. the README's `cc main.c $(pkg-config --cflags --libs hooked)` line,
#     and hooked.pc's version;
#  6. every installed program starting with LD_LIBRARY_PATH unset (RPATH),
#     also after the prefix moved;
#  7. the uninstall target removing what the install put in place.
#
# Inputs (-D): HOOKED_BINARY_DIR, CONSUMER_DIR, WORK_DIR, CONFIG, GENERATOR,
# C_COMPILER, CXX_COMPILER, LIBDIR, DOCDIR, SHARED, STATIC, MPI, MPIEXEC,
# RPATH (the installed programs carry one), VERSION, COMPONENTS (the
# install components), SANITIZE, PKG_CONFIG, README, READELF, TOOLS,
# UNINSTALL (the build has the uninstall target), SOURCE_DIR.

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

# fail_with(<what> <expected message regex> <command...>): the command must
# fail and say why.
function(fail_with what expected)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(JOIN ARGN " " cmdline)
  message(STATUS "[${what}, must fail] ${cmdline}\n${out}${err}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} succeeded; it must fail")
  endif()
  string(REGEX REPLACE "[ \n]+" " " flat "${out}${err}")
  if(NOT flat MATCHES "${expected}")
    message(FATAL_ERROR "install test: ${what} failed without saying '${expected}'")
  endif()
endfunction()

# The files (and symlinks) under a directory, relative to it, sorted.
function(files_under out dir)
  file(GLOB_RECURSE found LIST_DIRECTORIES false RELATIVE ${dir} ${dir}/*)
  list(SORT found)
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(config_args "")
set(build_type_arg "")
if(CONFIG)
  set(config_args --config ${CONFIG})
  set(build_type_arg -DCMAKE_BUILD_TYPE=${CONFIG})
endif()
run(install ${CMAKE_COMMAND} --install ${HOOKED_BINARY_DIR} --prefix ${prefix} ${config_args})
files_under(full ${prefix})

# ---- 1. components ----------------------------------------------------------
foreach(f include/hooked/hooked.h include/hooked/hooked.hpp include/hooked/hooks.hpp include/hooked/loop.h
          include/hooked/sys/hook.h
          include/hooked/sys/executor.h ${LIBDIR}/cmake/hooked/hookedConfig.cmake
          ${LIBDIR}/cmake/hooked/hookedConfigVersion.cmake ${LIBDIR}/cmake/hooked/hookedTargets.cmake
          ${LIBDIR}/pkgconfig/hooked.pc ${DOCDIR}/LICENSE)
  if(NOT f IN_LIST full)
    message(FATAL_ERROR "install test: ${f} was not installed")
  endif()
endforeach()
file(SHA256 ${SOURCE_DIR}/LICENSE license_source)
file(SHA256 ${prefix}/${DOCDIR}/LICENSE license_installed)
if(NOT license_source STREQUAL license_installed)
  message(FATAL_ERROR "install test: the installed ${DOCDIR}/LICENSE is not the source tree's LICENSE")
endif()
foreach(f IN LISTS full)
  if(f MATCHES "(^|/)(train_digits|digits_own_loop|cpp_trainer|step_overhead|checkpoint|make_checkpoint|test_[^/]*)$"
     OR f MATCHES "share/hooked/data")
    message(FATAL_ERROR "install test: ${f} was installed; examples, benchmarks and tests never are")
  endif()
endforeach()

# What each component may hold (regexes over the relative paths), and one
# file it must hold.
string(REPLACE "." "\\." libdir_re "${LIBDIR}")
string(REPLACE "." "\\." docdir_re "${DOCDIR}")
set(allowed_Runtime "^${libdir_re}/libhooked\\.so\\.[0-9.]+$")
set(must_Runtime "${LIBDIR}/libhooked.so.${VERSION}")
set(allowed_Development "^include/hooked/(sys/)?[a-z_]+\\.h(pp)?$" "^${libdir_re}/libhooked\\.(a|so)$"
    "^${libdir_re}/cmake/hooked/hooked(Config|ConfigVersion|Targets(-[a-z]+)?)\\.cmake$"
    "^${libdir_re}/pkgconfig/hooked\\.pc$")
set(must_Development include/hooked/hooked.h)
set(allowed_Tools "^bin/hooked-(ckpt|events)$")
set(must_Tools bin/hooked-ckpt)
set(allowed_MpiRuntime "^${libdir_re}/libhooked-mpi\\.so\\.[0-9.]+$")
set(must_MpiRuntime "${LIBDIR}/libhooked-mpi.so.${VERSION}")
set(allowed_MpiDevelopment "^include/hooked/mpi\\.h$" "^${libdir_re}/libhooked-mpi\\.(a|so)$"
    "^${libdir_re}/cmake/hooked/hookedMpiTargets(-[a-z]+)?\\.cmake$" "^${libdir_re}/pkgconfig/hooked-mpi\\.pc$")
set(must_MpiDevelopment include/hooked/mpi.h)
if(SHARED)
  list(APPEND allowed_Runtime "^${docdir_re}/LICENSE$")
else()
  list(APPEND allowed_Development "^${docdir_re}/LICENSE$")
endif()
if(TOOLS AND NOT "Tools" IN_LIST COMPONENTS)
  message(FATAL_ERROR "install test: the tools are built but there is no Tools component: ${COMPONENTS}")
endif()

set(union "")
foreach(component IN LISTS COMPONENTS ITEMS Unspecified)
  set(dir ${WORK_DIR}/component-${component})
  run(install-${component} ${CMAKE_COMMAND} --install ${HOOKED_BINARY_DIR} --prefix ${dir} --component ${component}
      ${config_args})
  files_under(got ${dir})
  if(component STREQUAL "Unspecified")
    if(got)
      message(FATAL_ERROR "install test: files installed outside every component: ${got}")
    endif()
    continue()
  endif()
  if(NOT got)
    message(FATAL_ERROR "install test: `cmake --install --component ${component}` installed nothing")
  endif()
  if(NOT must_${component} IN_LIST got)
    message(FATAL_ERROR "install test: component ${component} lacks ${must_${component}}: ${got}")
  endif()
  foreach(f IN LISTS got)
    set(ok FALSE)
    foreach(re IN LISTS allowed_${component})
      if(f MATCHES "${re}")
        set(ok TRUE)
      endif()
    endforeach()
    if(NOT ok)
      message(FATAL_ERROR "install test: component ${component} holds ${f}, which belongs to another one")
    endif()
  endforeach()
  list(APPEND union ${got})
endforeach()
list(SORT union)
if(NOT union STREQUAL full)
  message(FATAL_ERROR "install test: the components together are not the full install:\n"
                      "components: ${union}\nfull:       ${full}")
endif()

# A sanitized libhooked needs the sanitizer runtime in every program that
# links it, so the consumer is built with the same -fsanitize flags.
set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
endif()
set(consumer_args -G ${GENERATOR} -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    "-DCMAKE_C_FLAGS=${flags}" "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}" ${build_type_arg})
# A machine without MPI, as far as CMake can tell.
set(no_mpi -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON)

# consumer(<label> <build dir> <configure args> <programs...>): configure and
# build the consumer project, then run the given programs.
function(consumer label dir find_args)
  run(configure-${label} ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${dir} ${consumer_args} ${find_args})
  run(build-${label} ${CMAKE_COMMAND} --build ${dir} ${config_args} --target ${ARGN})
  foreach(prog ${ARGN})
    set(exe ${dir}/${prog})
    if(CONFIG AND EXISTS ${dir}/${CONFIG}/${prog}) # multi-config generators
      set(exe ${dir}/${CONFIG}/${prog})
    endif()
    set(launcher "")
    if(prog STREQUAL "consumer_mpi" AND MPIEXEC)
      set(launcher ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
                   ${MPIEXEC} -n 1)
    endif()
    run(${prog}-${label} ${launcher} ${exe})
  endforeach()
endfunction()

# ---- 2. find_package(hooked 0.2) on a machine view without MPI ----------------
set(programs consumer_main consumer_own_loop consumer_custom_hook consumer_cpp_hook consumer_version consumer_averages
  consumer_run_control)
consumer(prefix ${WORK_DIR}/consumer-build "-DCMAKE_PREFIX_PATH=${prefix};${no_mpi}" ${programs})
# The README's host-loop program resumes: a second run starts at step 500.
run(own_loop-resume ${WORK_DIR}/consumer-build/consumer_own_loop ${WORK_DIR}/own_loop_ckpt)
run(own_loop-resume ${WORK_DIR}/consumer-build/consumer_own_loop ${WORK_DIR}/own_loop_ckpt)
if(NOT run_output MATCHES "starting at step 500\n")
  message(FATAL_ERROR "install test: the README's host-loop program did not resume at step 500:\n${run_output}")
endif()

# ---- 3. components and versions asked of find_package --------------------------
# Configure only (-DCONSUMER_CXX=OFF saves the C++ compiler's detection).
set(find_args ${consumer_args} -DCMAKE_PREFIX_PATH=${prefix} -DCONSUMER_CXX=OFF)
if(MPI)
  consumer(mpi ${WORK_DIR}/consumer-mpi "-DCMAKE_PREFIX_PATH=${prefix};-DCONSUMER_CXX=OFF;-DCONSUMER_MPI=ON"
           consumer_mpi)
  fail_with(mpi-without-mpi "hooked's mpi component needs MPI, and find_package\\(MPI COMPONENTS C\\) did not find it"
    ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer-no-mpi ${find_args} ${no_mpi} -DCONSUMER_MPI=ON)
else()
  fail_with(mpi-not-built "hooked was built without its mpi component \\(HOOKED_MPI=OFF or MPI not found\\)"
    ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer-no-mpi ${find_args} -DCONSUMER_MPI=ON)
endif()
fail_with(unknown-component "hooked has no component 'nonesuch' \\(its one component is mpi\\)"
  ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer-nonesuch ${find_args} -DCONSUMER_COMPONENTS=nonesuch)
# While the major is 0 each minor is its own ABI: 0.2.x meets "0.2" and no
# other minor's request.
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ "${VERSION}")
set(major ${CMAKE_MATCH_1})
set(minor ${CMAKE_MATCH_2})
if(major EQUAL 0)
  math(EXPR next "${minor} + 1")
  set(other_versions "0.${next}")
  if(minor GREATER 0)
    math(EXPR previous "${minor} - 1")
    list(APPEND other_versions "0.${previous}")
  endif()
  foreach(asked IN LISTS other_versions)
    fail_with(version-${asked} "compatible with requested version \"${asked}\".*version: ${VERSION}"
      ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/consumer-version-${asked} ${find_args}
      -DCONSUMER_HOOKED_VERSION=${asked})
  endforeach()
endif()

# ---- 4. the build tree's export, without installing: -Dhooked_DIR=<build dir> ----
consumer(build-tree ${WORK_DIR}/consumer-build-tree -Dhooked_DIR=${HOOKED_BINARY_DIR} consumer_main consumer_version)

# ---- 5. pkg-config ------------------------------------------------------------
# The README's command, exactly as written there (between its
# <!-- pkg-config-command --> markers), run by sh in a directory holding
# main.c. The same plain line must work for the static (default) and the
# shared library. `cc` is this build's C compiler with strict warnings (and
# the sanitizer flags), found first on PATH.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "install test: pkg-config was not found; install it (apt-get install -y pkg-config)")
endif()
# The README is read as one string and cut at the markers, not as a list of
# lines: a list would split at any `;` and mis-read a line with an unbalanced
# `[` elsewhere in the README.
file(READ ${README} readme_text)
string(FIND "${readme_text}" "<!-- pkg-config-command -->" begin)
string(FIND "${readme_text}" "<!-- /pkg-config-command -->" end)
if(begin EQUAL -1 OR end EQUAL -1 OR end LESS begin)
  message(FATAL_ERROR "install test: README.md must hold <!-- pkg-config-command --> and "
                      "<!-- /pkg-config-command --> markers, in that order")
endif()
string(LENGTH "<!-- pkg-config-command -->" marker_length)
math(EXPR begin "${begin} + ${marker_length}")
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${readme_text}" ${begin} ${length} block)
string(REGEX REPLACE "```[a-z]*" "" block "${block}")
string(STRIP "${block}" pc_command)
if(pc_command STREQUAL "" OR pc_command MATCHES "\n" OR NOT pc_command MATCHES "pkg-config --cflags --libs hooked")
  message(FATAL_ERROR "install test: README.md must hold one pkg-config line between its "
                      "<!-- pkg-config-command --> markers, found: ${pc_command}")
endif()
if(pc_command MATCHES "--static")
  message(FATAL_ERROR "install test: the README's pkg-config line must work without --static: ${pc_command}")
endif()

file(READ ${prefix}/${LIBDIR}/pkgconfig/hooked.pc pc)
if(NOT pc MATCHES "prefix=${prefix}\n" OR NOT pc MATCHES "libdir=\\\${prefix}/")
  message(FATAL_ERROR "install test: hooked.pc does not use the install prefix:\n${pc}")
endif()
set(pc_dir ${WORK_DIR}/pkgconfig)
set(tool_dir ${WORK_DIR}/pkgconfig-bin)
file(MAKE_DIRECTORY ${pc_dir} ${tool_dir})
file(COPY ${CONSUMER_DIR}/main.c DESTINATION ${pc_dir})
file(WRITE ${tool_dir}/cc "#!/bin/sh\nexec '${C_COMPILER}' -std=c11 -Wall -Wextra -Wpedantic -Werror ${flags} \"$@\"\n")
file(WRITE ${tool_dir}/pkg-config "#!/bin/sh\nexec '${PKG_CONFIG}' \"$@\"\n")
file(CHMOD ${tool_dir}/cc ${tool_dir}/pkg-config PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
set(pc_env PATH=${tool_dir}:$ENV{PATH} PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig)
run(pkg-config-version ${CMAKE_COMMAND} -E env ${pc_env} pkg-config --modversion hooked)
if(NOT run_output STREQUAL "${VERSION}\n")
  message(FATAL_ERROR "install test: hooked.pc says version ${run_output}, the package is ${VERSION}")
endif()
# Against a static libhooked alone the plain line carries what the library
# needs (glibc may resolve some of it without, so this is checked directly too).
run(pkg-config ${CMAKE_COMMAND} -E env ${pc_env} pkg-config --cflags --libs hooked)
if(NOT SHARED AND NOT run_output MATCHES "-lhooked -pthread -lm( |\n|$)")
  message(FATAL_ERROR "install test: a static hooked.pc must list -pthread -lm in Libs: ${run_output}")
endif()
run(readme-pkg-config ${CMAKE_COMMAND} -E chdir ${pc_dir} ${CMAKE_COMMAND} -E env ${pc_env} sh -c "${pc_command}")
# A shared libhooked is found through LD_LIBRARY_PATH, as pkg-config users
# outside the default library path do.
run(consumer_pkgconfig ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/${LIBDIR} ${pc_dir}/main)

# ---- 6. the installed programs ---------------------------------------------------
# hooked-ckpt and hooked-events start with LD_LIBRARY_PATH unset: a shared
# libhooked is found through their $ORIGIN-relative RPATH, also after the
# prefix has moved (unless hooked was configured for a system library
# directory, where they carry none). Each answers --help with exit status 0.
file(GLOB programs ${prefix}/bin/*)
if(TOOLS AND NOT EXISTS ${prefix}/bin/hooked-ckpt)
  message(FATAL_ERROR "install test: bin/hooked-ckpt was not installed")
endif()
set(program_env --unset=LD_LIBRARY_PATH)
if(SHARED AND RPATH)
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
  set(moved ${WORK_DIR}/prefix-moved)
  file(RENAME ${prefix} ${moved})
  set(prefix ${moved})
  file(GLOB programs ${prefix}/bin/*)
elseif(SHARED)
  set(program_env LD_LIBRARY_PATH=${prefix}/${LIBDIR})
endif()
foreach(exe IN LISTS programs)
  get_filename_component(name ${exe} NAME)
  run(${name}-help ${CMAKE_COMMAND} -E env ${program_env} ${exe} --help)
endforeach()

# ---- 7. uninstall ------------------------------------------------------------------
# A fresh full install (its install_manifest.txt is the one the target
# reads) beside a file hooked did not install, which must stay.
if(UNINSTALL)
  set(prefix ${WORK_DIR}/prefix-uninstall)
  run(install-again ${CMAKE_COMMAND} --install ${HOOKED_BINARY_DIR} --prefix ${prefix} ${config_args})
  file(WRITE ${prefix}/${LIBDIR}/not-hooked.txt "installed by someone else\n")
  run(uninstall ${CMAKE_COMMAND} --build ${HOOKED_BINARY_DIR} ${config_args} --target uninstall)
  files_under(left ${prefix})
  if(NOT left STREQUAL "${LIBDIR}/not-hooked.txt")
    message(FATAL_ERROR "install test: after uninstall the prefix holds ${left}; only ${LIBDIR}/not-hooked.txt "
                        "should be left")
  endif()
  foreach(dir include/hooked ${LIBDIR}/cmake/hooked ${DOCDIR})
    if(EXISTS ${prefix}/${dir})
      message(FATAL_ERROR "install test: uninstall left the empty directory ${dir}")
    endif()
  endforeach()
endif()
