# libhooked, shared and/or static from one configure, as zstd builds
# libzstd_shared and libzstd_static:
#
#   hooked::hooked_shared  libhooked.so.0.2.0, SONAME libhooked.so.0.2 (the
#                          ABI may change with every minor while the major is 0)
#   hooked::hooked_static  libhooked.a
#   hooked::hooked         the shared one when it is built, else the static one
#
# HOOKED_BUILD_SHARED and HOOKED_BUILD_STATIC choose (both may be ON); unset,
# they follow BUILD_SHARED_LIBS. In this tree `hooked` names the same target
# as hooked::hooked. Installed, hookedConfig.cmake makes hooked::hooked the
# same alias, so a consumer picks a flavour by linking hooked::hooked_static.

file(GLOB HOOKED_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.c ${PROJECT_SOURCE_DIR}/src/*/*.c)
list(FILTER HOOKED_SOURCES EXCLUDE REGEX "/src/mpi/")
file(GLOB HOOKED_PUBLIC_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/hooked/*.h)
list(FILTER HOOKED_PUBLIC_HEADERS EXCLUDE REGEX "/hooked/mpi\\.h$")
file(GLOB HOOKED_SYS_HEADERS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/hooked/sys/*.h)

function(hooked_add_library target type)
  add_library(${target} ${type} ${HOOKED_SOURCES})
  add_library(hooked::${target} ALIAS ${target})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_compile_options(${target} PRIVATE ${HOOKED_WARNINGS})
  target_compile_definitions(${target} PRIVATE _POSIX_C_SOURCE=200809L)
  target_link_libraries(${target} PRIVATE Threads::Threads m)
  # Both are libhooked; EXPORT_NAME gives the installed hooked::<target>.
  set_target_properties(${target} PROPERTIES OUTPUT_NAME hooked EXPORT_NAME ${target} C_VISIBILITY_PRESET hidden)
endfunction()

set(HOOKED_LIBRARY_TARGETS "")
if(HOOKED_BUILD_SHARED)
  hooked_add_library(hooked_shared SHARED)
  # HK_API exports from the library (dllexport on Windows) and imports into
  # its users.
  target_compile_definitions(hooked_shared PRIVATE HK_BUILDING_SHARED INTERFACE HK_SHARED)
  set_target_properties(hooked_shared PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  list(APPEND HOOKED_LIBRARY_TARGETS hooked_shared)
endif()
if(HOOKED_BUILD_STATIC)
  hooked_add_library(hooked_static STATIC)
  list(APPEND HOOKED_LIBRARY_TARGETS hooked_static)
endif()
list(GET HOOKED_LIBRARY_TARGETS 0 HOOKED_DEFAULT_TARGET)
add_library(hooked ALIAS ${HOOKED_DEFAULT_TARGET})
add_library(hooked::hooked ALIAS ${HOOKED_DEFAULT_TARGET})

set(hooked_soname "libhooked.so.${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
if(HOOKED_BUILD_SHARED AND HOOKED_BUILD_STATIC)
  hooked_summary(library on "shared (${hooked_soname}) and static; hooked::hooked is the shared one")
elseif(HOOKED_BUILD_SHARED)
  hooked_summary(library on "shared (${hooked_soname}); -DHOOKED_BUILD_STATIC=ON adds the static one")
else()
  hooked_summary(library on "static; -DHOOKED_BUILD_SHARED=ON adds the shared one")
endif()
