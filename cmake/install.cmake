# Install rules for hooked, in components, with the CMake config package
# (install tree and build tree), the pkg-config files and the uninstall
# target. Included from the top-level CMakeLists.txt once the library
# targets exist.
#
# Components (`cmake --install build --component <name>`; each is one Debian
# package, cmake/package.cmake):
#   Runtime         libhooked.so.0.2* and the LICENSE
#   Development     the headers, libhooked.a, the libhooked.so link, the CMake
#                   package and hooked.pc (the LICENSE too when only the
#                   static library is built)
#   Tools           hooked-ckpt and hooked-events (tools/CMakeLists.txt)
#   MpiRuntime      libhooked-mpi.so.0.2* (with hooked::mpi)
#   MpiDevelopment  hooked/mpi.h, its library link, CMake targets and
#                   hooked-mpi.pc
# Nothing is installed outside them: examples, benchmarks and tests never.

include(CMakePackageConfigHelpers)

# A project that vendors hooked with add_subdirectory() usually installs its
# own program, not our headers, so installing is opt-in there.
option(HOOKED_INSTALL "Generate install rules for hooked" ${HOOKED_TOP_LEVEL})

if(NOT HOOKED_INSTALL)
  hooked_summary(install off "HOOKED_INSTALL=OFF")
  return()
endif()

set(HOOKED_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hooked)

# ---- RPATH of the installed programs ------------------------------------------
# hooked-ckpt and hooked-events (and any program installed alongside them)
# find a shared libhooked through an RPATH relative to their own location
# ($ORIGIN/../lib), so they start without LD_LIBRARY_PATH in any prefix,
# including one chosen with `cmake --install --prefix` and one moved after
# installing. A library directory the linker searches anyway
# (/usr/lib/<multiarch> for a Debian package) needs none, and Debian's
# policy wants none there. CMAKE_INSTALL_RPATH initializes the INSTALL_RPATH
# of every target created after this point in hooked's directory scope;
# libhooked itself exists already and keeps none, and a parent project that
# vendors hooked is not affected. One given on the command line wins.
# libhooked-mpi finds libhooked beside it ($ORIGIN) the same way: a program
# linking hooked::mpi alone may not name libhooked itself (--as-needed).
if(HOOKED_BUILD_SHARED AND NOT DEFINED CMAKE_INSTALL_RPATH)
  if(NOT "${CMAKE_INSTALL_FULL_LIBDIR}" IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
      set(CMAKE_INSTALL_RPATH "${CMAKE_INSTALL_FULL_LIBDIR}")
    else()
      file(RELATIVE_PATH hooked_bin_to_lib /p/${CMAKE_INSTALL_BINDIR} /p/${CMAKE_INSTALL_LIBDIR})
      set(CMAKE_INSTALL_RPATH "$ORIGIN/${hooked_bin_to_lib}")
    endif()
    if(HOOKED_HAVE_MPI)
      set_target_properties(hooked_mpi PROPERTIES INSTALL_RPATH "$ORIGIN")
    endif()
  endif()
endif()

# ---- the library, its headers and license ---------------------------------------
install(TARGETS ${HOOKED_LIBRARY_TARGETS}
  EXPORT hookedTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${HOOKED_PUBLIC_HEADERS} ${PROJECT_SOURCE_DIR}/include/hooked/hooked.hpp
              ${PROJECT_SOURCE_DIR}/include/hooked/hooks.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hooked COMPONENT Development)
install(FILES ${HOOKED_SYS_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hooked/sys COMPONENT Development)
# With the shared library when there is one, so every Debian package has it
# through its dependencies; else with the static library.
if(HOOKED_BUILD_SHARED)
  set(HOOKED_LICENSE_COMPONENT Runtime)
else()
  set(HOOKED_LICENSE_COMPONENT Development)
endif()
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT ${HOOKED_LICENSE_COMPONENT})

# ---- hooked::mpi, when built ----------------------------------------------------
# Its own components and its own export file, which hookedConfig.cmake reads
# only for `find_package(hooked COMPONENTS mpi)`: a program that links
# hooked::hooked alone never needs MPI.
if(HOOKED_HAVE_MPI)
  install(TARGETS hooked_mpi
    EXPORT hookedMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT MpiRuntime NAMELINK_COMPONENT MpiDevelopment
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT MpiDevelopment
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT MpiRuntime)
  install(FILES ${PROJECT_SOURCE_DIR}/include/hooked/mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hooked
          COMPONENT MpiDevelopment)
  install(EXPORT hookedMpiTargets
    NAMESPACE hooked::
    FILE hookedMpiTargets.cmake
    DESTINATION ${HOOKED_CMAKE_INSTALL_DIR}
    COMPONENT MpiDevelopment)
  export(EXPORT hookedMpiTargets NAMESPACE hooked:: FILE ${PROJECT_BINARY_DIR}/hookedMpiTargets.cmake)
endif()

# ---- CMake config package -------------------------------------------------
install(EXPORT hookedTargets
  NAMESPACE hooked::
  FILE hookedTargets.cmake
  DESTINATION ${HOOKED_CMAKE_INSTALL_DIR}
  COMPONENT Development)

set(HOOKED_CONFIG_HAVE_MPI ${HOOKED_HAVE_MPI})
set(HOOKED_CONFIG_STATIC ${HOOKED_BUILD_STATIC})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hookedConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hookedConfig.cmake
  INSTALL_DESTINATION ${HOOKED_CMAKE_INSTALL_DIR})
# The SONAME changes with every minor while the major is 0, so 0.2 accepts
# 0.2.x only; from 1.0 on, the same major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(hooked_compatibility SameMinorVersion)
else()
  set(hooked_compatibility SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hookedConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${hooked_compatibility})
install(FILES ${PROJECT_BINARY_DIR}/hookedConfig.cmake ${PROJECT_BINARY_DIR}/hookedConfigVersion.cmake
  DESTINATION ${HOOKED_CMAKE_INSTALL_DIR}
  COMPONENT Development)

# Build tree: `-Dhooked_DIR=<build dir>` works without installing. The config
# file only refers to ${CMAKE_CURRENT_LIST_DIR}, so the same one serves both.
export(EXPORT hookedTargets
  NAMESPACE hooked::
  FILE ${PROJECT_BINARY_DIR}/hookedTargets.cmake)

# ---- pkg-config -------------------------------------------------------------
# `cmake --install --prefix P` may choose the prefix after configuration, so
# the prefix is substituted at install time: the first pass fills in
# everything else and leaves "@CMAKE_INSTALL_PREFIX@" for the second.
set(HOOKED_PC_PREFIX "@CMAKE_INSTALL_PREFIX@")
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(HOOKED_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(HOOKED_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
# What libhooked itself links (Threads::Threads m). A shared libhooked
# carries them as its own dependencies, so they are private, and `-lhooked`
# links the shared one when both are installed; a static one alone cannot,
# so they go into Libs and the plain `pkg-config --cflags --libs hooked`
# links either variant without --static.
if(HOOKED_BUILD_SHARED)
  set(HOOKED_PC_CFLAGS " -DHK_SHARED")
  set(HOOKED_PC_LIBS "")
  set(HOOKED_PC_LIBS_PRIVATE " -pthread -lm")
else()
  set(HOOKED_PC_CFLAGS "")
  set(HOOKED_PC_LIBS " -pthread -lm")
  set(HOOKED_PC_LIBS_PRIVATE "")
endif()
function(hooked_install_pc name component)
  configure_file(${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${name}.pc.in ${PROJECT_BINARY_DIR}/${name}.pc.stage @ONLY)
  install(CODE "configure_file(\"${PROJECT_BINARY_DIR}/${name}.pc.stage\" \"${PROJECT_BINARY_DIR}/${name}.pc\" @ONLY)"
          COMPONENT ${component})
  install(FILES ${PROJECT_BINARY_DIR}/${name}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT ${component})
endfunction()
hooked_install_pc(hooked Development)
if(HOOKED_HAVE_MPI)
  # `pkg-config --cflags --libs hooked-mpi` (requires the ompi-c module Open
  # MPI installs; MPICH's is mpich).
  hooked_install_pc(hooked-mpi MpiDevelopment)
endif()

# ---- uninstall --------------------------------------------------------------
# `cmake --build build --target uninstall` removes what the last full
# `cmake --install` from this build tree installed (cmake/uninstall.cmake.in). A parent
# project's manifest is its own business, so a subproject adds none.
set(HOOKED_INSTALL_COMPONENTS Runtime Development)
if(HOOKED_BUILD_TOOLS)
  list(APPEND HOOKED_INSTALL_COMPONENTS Tools)
endif()
if(HOOKED_HAVE_MPI)
  list(APPEND HOOKED_INSTALL_COMPONENTS MpiRuntime MpiDevelopment)
endif()
if(NOT HOOKED_BUILD_SHARED)
  list(REMOVE_ITEM HOOKED_INSTALL_COMPONENTS Runtime MpiRuntime)
endif()
list(JOIN HOOKED_INSTALL_COMPONENTS ", " hooked_components)
if(HOOKED_TOP_LEVEL AND NOT TARGET uninstall)
  set(HOOKED_OWN_INSTALL_DIRS
    ${CMAKE_INSTALL_INCLUDEDIR}/hooked/sys ${CMAKE_INSTALL_INCLUDEDIR}/hooked ${HOOKED_CMAKE_INSTALL_DIR}
    ${CMAKE_INSTALL_DOCDIR})
  configure_file(${CMAKE_CURRENT_LIST_DIR}/uninstall.cmake.in ${PROJECT_BINARY_DIR}/hooked_uninstall.cmake @ONLY)
  add_custom_target(uninstall
    COMMAND ${CMAKE_COMMAND} -P ${PROJECT_BINARY_DIR}/hooked_uninstall.cmake
    COMMENT "Removing the files install_manifest.txt lists"
    VERBATIM)
  hooked_summary(install on "components ${hooked_components}; the uninstall target removes what was installed")
else()
  hooked_summary(install on "components ${hooked_components}")
endif()
