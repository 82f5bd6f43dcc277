# Packaging for hooked: install rules, a CMake config package (install tree
# and build tree) and a pkg-config file. Included from the top-level
# CMakeLists.txt after the `hooked` target exists.

include(CMakePackageConfigHelpers)

# A project that vendors hooked with add_subdirectory() usually installs its
# own program, not our headers, so installing is opt-in there.
option(HOOKED_INSTALL "Generate install rules for hooked" ${HOOKED_TOP_LEVEL})

if(NOT HOOKED_INSTALL)
  hooked_summary(install off "HOOKED_INSTALL=OFF")
  return()
endif()
hooked_summary(install on "")

set(HOOKED_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hooked)

# ---- RPATH of the installed programs ------------------------------------------
# hooked-ckpt, train_digits and any program installed alongside them find a
# shared libhooked through an RPATH relative to their own location
# ($ORIGIN/../lib), so they start without LD_LIBRARY_PATH in any prefix,
# including one chosen with `cmake --install --prefix` and one moved after
# installing. CMAKE_INSTALL_RPATH initializes the INSTALL_RPATH of every
# target created after this point in hooked's directory scope (tools/,
# examples/, ...); libhooked itself exists already and keeps none, and a
# parent project that vendors hooked is not affected. One given on the
# command line wins.
if(HOOKED_BUILD_SHARED AND NOT DEFINED CMAKE_INSTALL_RPATH)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
    set(CMAKE_INSTALL_RPATH "${CMAKE_INSTALL_FULL_LIBDIR}")
  else()
    file(RELATIVE_PATH hooked_bin_to_lib /p/${CMAKE_INSTALL_BINDIR} /p/${CMAKE_INSTALL_LIBDIR})
    set(CMAKE_INSTALL_RPATH "$ORIGIN/${hooked_bin_to_lib}")
  endif()
endif()

install(TARGETS ${HOOKED_LIBRARY_TARGETS}
  EXPORT hookedTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${HOOKED_PUBLIC_HEADERS} ${PROJECT_SOURCE_DIR}/include/hooked/hooked.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hooked)
install(FILES ${HOOKED_SYS_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hooked/sys)

# hooked::mpi, when built: its library in the same export set (a consumer
# links hooked::mpi), its header, and a pkg-config module of its own below.
if(HOOKED_HAVE_MPI)
  install(TARGETS hooked_mpi
    EXPORT hookedTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/include/hooked/mpi.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hooked)
endif()

# ---- CMake config package -------------------------------------------------
install(EXPORT hookedTargets
  NAMESPACE hooked::
  FILE hookedTargets.cmake
  DESTINATION ${HOOKED_CMAKE_INSTALL_DIR})

set(HOOKED_CONFIG_HAVE_MPI ${HOOKED_HAVE_MPI})
set(HOOKED_CONFIG_STATIC ${HOOKED_BUILD_STATIC})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/hookedConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hookedConfig.cmake
  INSTALL_DESTINATION ${HOOKED_CMAKE_INSTALL_DIR})
# The ABI may change between 0.x minors (SOVERSION 0.<minor>); the CMake
# version check follows the issue's SameMajorVersion policy.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hookedConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hookedConfig.cmake ${PROJECT_BINARY_DIR}/hookedConfigVersion.cmake
  DESTINATION ${HOOKED_CMAKE_INSTALL_DIR})

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
# carries them as its own dependencies, so they are private; a static one
# (the default) cannot, so they go into Libs and the plain
# `pkg-config --cflags --libs hooked` links either variant without --static.
if(HOOKED_BUILD_SHARED)
  set(HOOKED_PC_CFLAGS " -DHK_SHARED")
  set(HOOKED_PC_LIBS "")
  set(HOOKED_PC_LIBS_PRIVATE " -pthread -lm")
else()
  set(HOOKED_PC_CFLAGS "")
  set(HOOKED_PC_LIBS " -pthread -lm")
  set(HOOKED_PC_LIBS_PRIVATE "")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/hooked.pc.in ${PROJECT_BINARY_DIR}/hooked.pc.stage @ONLY)
install(CODE "configure_file(\"${PROJECT_BINARY_DIR}/hooked.pc.stage\" \"${PROJECT_BINARY_DIR}/hooked.pc\" @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/hooked.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

if(HOOKED_HAVE_MPI)
  # hooked-mpi.pc: `pkg-config --cflags --libs hooked-mpi` (requires the
  # ompi-c module Open MPI installs; MPICH's is mpich).
  configure_file(${CMAKE_CURRENT_LIST_DIR}/hooked-mpi.pc.in ${PROJECT_BINARY_DIR}/hooked-mpi.pc.stage @ONLY)
  install(CODE "configure_file(\"${PROJECT_BINARY_DIR}/hooked-mpi.pc.stage\" \"${PROJECT_BINARY_DIR}/hooked-mpi.pc\" @ONLY)")
  install(FILES ${PROJECT_BINARY_DIR}/hooked-mpi.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()
