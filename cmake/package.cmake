# Debian packages with CPack, one per install component (cmake/install.cmake):
#
#   libhooked0.2        Runtime         the shared library (named after its
#                                       SONAME, libhooked.so.0.2)
#   libhooked-dev       Development     headers, static library, CMake and
#                                       pkg-config files; depends on
#                                       libhooked0.2 of the same version
#   hooked-tools        Tools           hooked-ckpt and hooked-events
#   libhooked-mpi0.2    MpiRuntime      libhooked-mpi (when built with MPI)
#   libhooked-mpi-dev   MpiDevelopment  hooked/mpi.h and its CMake and
#                                       pkg-config files
#
# Build them from a tree configured for /usr (Debian's multiarch library
# directory) with both libraries:
#   cmake -S . -B build-deb -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
#     -DHOOKED_BUILD_SHARED=ON -DHOOKED_BUILD_STATIC=ON
#   cmake --build build-deb -j2 && (cd build-deb && cpack -G DEB)
# dpkg-shlibdeps (dpkg-dev) and file work out the packages' dependencies on
# system libraries; the dependencies between hooked's own packages are the
# components' (exact version).

set(CPACK_PACKAGE_NAME hooked)
set(CPACK_PACKAGE_VENDOR "the hooked authors")
set(CPACK_PACKAGE_CONTACT "the hooked authors")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_INSTALL_DIRECTORY hooked)
set(CPACK_COMPONENTS_ALL ${HOOKED_INSTALL_COMPONENTS})
set(CPACK_COMPONENTS_GROUPING IGNORE)

set(hooked_abi ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The tools and libhooked-mpi link libhooked.so.0.2 from another package of
# this build: dpkg-shlibdeps finds it here, and the dependency on it comes
# from the components' DEPENDS below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(hooked_about "hooked gives C and C++ training programs what TensorFlow's
MonitoredSession gives Python: ordered hooks around every training step,
stops you can trust, and atomic, CRC-checked safetensors checkpoints,
around a program's own training loop or an embedded graph executor.")

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libhooked${hooked_abi})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "monitored training sessions for C and C++ (shared library)
${hooked_about}
.
This package holds the shared library.")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libhooked-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION "monitored training sessions for C and C++ (development files)
${hooked_about}
.
This package holds the headers, the static library, the CMake package
(find_package(hooked)) and the pkg-config file (hooked.pc).")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME hooked-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "inspect hooked checkpoints and event files
${hooked_about}
.
This package holds hooked-ckpt (list, verify, diff and dump checkpoints)
and hooked-events (the scalars of event files as CSV or an HTML page of
charts).")

set(CPACK_DEBIAN_MPIRUNTIME_PACKAGE_NAME libhooked-mpi${hooked_abi})
set(CPACK_DEBIAN_MPIRUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_MPIRUNTIME_DESCRIPTION "monitored training sessions for C and C++ over MPI (shared library)
${hooked_about}
.
This package holds libhooked-mpi: deterministic averaging, the broadcast
and stop hooks and a parameter server for training across processes.")

set(CPACK_DEBIAN_MPIDEVELOPMENT_PACKAGE_NAME libhooked-mpi-dev)
set(CPACK_DEBIAN_MPIDEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_MPIDEVELOPMENT_DESCRIPTION "monitored training sessions for C and C++ over MPI (development files)
${hooked_about}
.
This package holds hooked/mpi.h, the hooked::mpi component of the CMake
package and hooked-mpi.pc.")
# The CMake component finds MPI, and hooked-mpi.pc requires Open MPI's ompi-c
# module.
set(CPACK_DEBIAN_MPIDEVELOPMENT_PACKAGE_DEPENDS libopenmpi-dev)

include(CPack)

# Component dependencies, which become exact-version package dependencies.
if(HOOKED_BUILD_SHARED)
  cpack_add_component(Runtime DISPLAY_NAME "Shared library")
  cpack_add_component(Development DISPLAY_NAME "Development files" DEPENDS Runtime)
  if(HOOKED_BUILD_TOOLS)
    cpack_add_component(Tools DISPLAY_NAME "Tools" DEPENDS Runtime)
  endif()
  if(HOOKED_HAVE_MPI)
    cpack_add_component(MpiRuntime DISPLAY_NAME "MPI shared library" DEPENDS Runtime)
    cpack_add_component(MpiDevelopment DISPLAY_NAME "MPI development files" DEPENDS Development MpiRuntime)
  endif()
else()
  cpack_add_component(Development DISPLAY_NAME "Development files")
  if(HOOKED_BUILD_TOOLS)
    cpack_add_component(Tools DISPLAY_NAME "Tools")
  endif()
  if(HOOKED_HAVE_MPI)
    cpack_add_component(MpiDevelopment DISPLAY_NAME "MPI development files" DEPENDS Development)
  endif()
endif()
