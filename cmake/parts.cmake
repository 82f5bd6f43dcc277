# The optional parts of hooked and the summary configure ends with.
#
#   hooked_tristate(VAR DEFAULT DOC)  a cache option taking AUTO, ON or OFF
#   hooked_bool(VAR)                  VAR's truth value as ON or OFF
#   hooked_decide(VAR LABEL MISSING)  AUTO becomes ON or OFF, ON with
#                                     something missing fails configure
#   hooked_summary(KEY STATE DETAIL)  one line of the summary
#   hooked_print_summary()            the summary: each part, on or off and why
#   hooked_check_header_version(H)    include/hooked/common.h's HOOKED_VERSION_*
#                                     must be the project's version

set(HOOKED_TRUE_VALUES ON YES TRUE Y 1)
set(HOOKED_FALSE_VALUES OFF NO FALSE N 0)

function(hooked_bool var)
  if(${var})
    set(${var} ON PARENT_SCOPE)
  else()
    set(${var} OFF PARENT_SCOPE)
  endif()
endfunction()

# A value a parent project set as a normal variable before
# add_subdirectory() wins over the cache default, so it is read first.
function(hooked_tristate var default doc)
  if(DEFINED ${var})
    set(value "${${var}}")
  else()
    set(value "${default}")
  endif()
  set(${var} "${default}" CACHE STRING "${doc}")
  set_property(CACHE ${var} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${value}" value)
  if(value IN_LIST HOOKED_TRUE_VALUES)
    set(value ON)
  elseif(value IN_LIST HOOKED_FALSE_VALUES)
    set(value OFF)
  elseif(NOT value STREQUAL "AUTO")
    message(FATAL_ERROR "hooked: ${var} is '${${var}}'; it takes AUTO, ON or OFF")
  endif()
  set(${var} ${value} PARENT_SCOPE)
endfunction()

# MISSING lists what the part needs and this machine lacks, each entry saying
# how to get it. The decision is also the part's line in the summary.
function(hooked_decide var label missing)
  if("${${var}}" STREQUAL "OFF")
    hooked_summary("${label}" off "${var}=OFF")
    set(${var} OFF PARENT_SCOPE)
    return()
  endif()
  list(JOIN missing ", " why)
  if(missing AND "${${var}}" STREQUAL "ON")
    message(FATAL_ERROR "hooked: ${var}=ON, but the ${label} cannot be built: ${why}. "
                        "Install what is missing, or configure with -D${var}=AUTO (build them only when "
                        "possible) or -D${var}=OFF.")
  elseif(missing)
    list(LENGTH missing n)
    if(n EQUAL 1)
      set(them it)
    else()
      set(them them)
    endif()
    hooked_summary("${label}" off "${why}; -D${var}=ON requires ${them}")
    set(${var} OFF PARENT_SCOPE)
  else()
    hooked_summary("${label}" on "")
    set(${var} ON PARENT_SCOPE)
  endif()
endfunction()

function(hooked_summary key state detail)
  set_property(GLOBAL PROPERTY HOOKED_SUMMARY_STATE_${key} "${state}")
  set_property(GLOBAL PROPERTY HOOKED_SUMMARY_DETAIL_${key} "${detail}")
endfunction()

# The Python interpreters the tests try, in their order: CMake's pick, then
# the system's own (a venv's python3 often lacks the Debian packages).
function(hooked_python_has out module_statement)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  set(${out} "" PARENT_SCOPE)
  foreach(candidate ${Python3_EXECUTABLE} /usr/bin/python3)
    if(EXISTS "${candidate}")
      execute_process(COMMAND "${candidate}" -c "${module_statement}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(${out} "${candidate}" PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
endfunction()

function(hooked_print_summary)
  # The Python checks are tests that run only where their modules are: they
  # are not a switch of their own, so their line is worked out here.
  if(NOT HOOKED_BUILD_TESTS)
    hooked_summary("python checks" off "the tests are off")
  else()
    hooked_python_has(numpy_python "import numpy")
    hooked_python_has(protobuf_python "from google.protobuf import descriptor_pb2")
    set(missing "")
    if(NOT numpy_python)
      list(APPEND missing "no python3 with numpy (Debian: python3-numpy): python_read_checkpoint is not registered")
    endif()
    if(NOT protobuf_python)
      list(APPEND missing "no python3 with protobuf (Debian: python3-protobuf): python_train_digits_events skips")
    endif()
    if(NOT HOOKED_BUILD_EXAMPLES)
      list(APPEND missing "the examples are off: the trainer's event and timeline checks are not registered")
    endif()
    list(JOIN missing "; " why)
    if(missing)
      hooked_summary("python checks" partly "${why}")
    else()
      hooked_summary("python checks" on "numpy and protobuf found")
    endif()
  endif()

  message(STATUS "")
  message(STATUS "hooked ${PROJECT_VERSION}: what this configure builds")
  foreach(key library "hooked::mpi" tools tests "python checks" examples benchmarks "fuzz targets" install)
    get_property(state GLOBAL PROPERTY HOOKED_SUMMARY_STATE_${key})
    get_property(detail GLOBAL PROPERTY HOOKED_SUMMARY_DETAIL_${key})
    if("${state}" STREQUAL "")
      continue()
    endif()
    string(LENGTH "${key}" len)
    math(EXPR pad "16 - ${len}")
    string(REPEAT " " ${pad} spaces)
    if(detail)
      message(STATUS "  ${key}${spaces}${state}: ${detail}")
    else()
      message(STATUS "  ${key}${spaces}${state}")
    endif()
  endforeach()
  message(STATUS "")
endfunction()

function(hooked_check_header_version header)
  file(STRINGS "${header}" lines REGEX "^#define HOOKED_VERSION_(MAJOR|MINOR|PATCH|STRING) ")
  set(found "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^#define HOOKED_VERSION_(MAJOR|MINOR|PATCH) +([0-9]+)")
      set(header_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
    elseif(line MATCHES "^#define HOOKED_VERSION_STRING +\"([^\"]*)\"")
      set(header_STRING "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(header_version "${header_MAJOR}.${header_MINOR}.${header_PATCH}")
  if(NOT header_version STREQUAL PROJECT_VERSION OR NOT header_STRING STREQUAL PROJECT_VERSION)
    message(FATAL_ERROR "hooked: ${header} says version ${header_version} (HOOKED_VERSION_STRING \"${header_STRING}\") "
                        "but CMakeLists.txt's project() says ${PROJECT_VERSION}; a release changes both")
  endif()
endfunction()
