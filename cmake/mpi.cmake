# hooked::mpi — the optional MPI component (include/hooked/mpi.h, src/mpi/).
# Sets HOOKED_HAVE_MPI. Its sources use hooked's public headers only.

set(HOOKED_HAVE_MPI OFF)
if(NOT HOOKED_MPI STREQUAL "OFF")
  if(HOOKED_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS C)
  else()
    find_package(MPI QUIET COMPONENTS C)
  endif()
  if(MPI_C_FOUND)
    set(HOOKED_HAVE_MPI ON)
  else()
    message(STATUS "hooked: MPI not found, hooked::mpi is not built (HOOKED_MPI=ON requires it)")
  endif()
endif()

if(HOOKED_HAVE_MPI)
  file(GLOB HOOKED_MPI_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/mpi/*.c)
  add_library(hooked_mpi ${HOOKED_MPI_SOURCES})
  add_library(hooked::mpi ALIAS hooked_mpi)
  set_target_properties(hooked_mpi PROPERTIES EXPORT_NAME mpi OUTPUT_NAME hooked-mpi
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    C_VISIBILITY_PRESET hidden)
  target_include_directories(hooked_mpi
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_options(hooked_mpi PRIVATE ${HOOKED_WARNINGS})
  target_compile_definitions(hooked_mpi PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(hooked_mpi PUBLIC hooked MPI::MPI_C)
  message(STATUS "hooked: building hooked::mpi (MPI ${MPI_C_VERSION})")
endif()
