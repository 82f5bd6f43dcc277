# hooked::mpi — the optional MPI component (include/hooked/mpi.h, src/mpi/),
# libhooked-mpi. Sets HOOKED_HAVE_MPI. Its sources use hooked's public
# headers only, and it links the default libhooked (shared when built).

set(hooked_missing "")
if(NOT HOOKED_MPI STREQUAL "OFF")
  if(HOOKED_MPI STREQUAL "ON")
    find_package(MPI COMPONENTS C)
  else()
    find_package(MPI QUIET COMPONENTS C)
  endif()
  if(NOT MPI_C_FOUND)
    set(hooked_missing "MPI not found (Debian: libopenmpi-dev)")
  endif()
endif()
hooked_decide(HOOKED_MPI "hooked::mpi" "${hooked_missing}")
set(HOOKED_HAVE_MPI ${HOOKED_MPI})

if(HOOKED_HAVE_MPI)
  hooked_summary("hooked::mpi" on "MPI ${MPI_C_VERSION} (${MPIEXEC_EXECUTABLE})")
  file(GLOB HOOKED_MPI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/mpi/*.c)
  if(HOOKED_BUILD_SHARED)
    add_library(hooked_mpi SHARED ${HOOKED_MPI_SOURCES})
  else()
    add_library(hooked_mpi STATIC ${HOOKED_MPI_SOURCES})
  endif()
  add_library(hooked::mpi ALIAS hooked_mpi)
  set_target_properties(hooked_mpi PROPERTIES EXPORT_NAME mpi OUTPUT_NAME hooked-mpi
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    C_VISIBILITY_PRESET hidden)
  target_include_directories(hooked_mpi
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_options(hooked_mpi PRIVATE ${HOOKED_WARNINGS})
  target_compile_definitions(hooked_mpi PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(hooked_mpi PUBLIC hooked MPI::MPI_C)
endif()
