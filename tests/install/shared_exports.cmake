# For a shared build: the library exports the public hk_ API and nothing
# else, hk__ cross-file internals stay hidden, and the SONAME carries the
# 0.<minor> ABI version.
#
# Inputs (-D): LIBRARY, NM, READELF, SONAME, EXPECTED_SONAME.

cmake_minimum_required(VERSION 3.20)

execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -D failed on ${LIBRARY}: ${err}")
endif()

string(REPLACE "\n" ";" lines "${out}")
set(public 0)
set(bad "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>[@version]"
  if(NOT line MATCHES "^[0-9a-fA-F]* +[A-Za-z] +([^@ ]+)")
    continue()
  endif()
  set(sym ${CMAKE_MATCH_1})
  if(sym MATCHES "^hk_" AND NOT sym MATCHES "^hk__")
    math(EXPR public "${public} + 1")
  else()
    list(APPEND bad "${sym}")
  endif()
endforeach()

if(bad)
  list(JOIN bad "\n  " bad_text)
  message(FATAL_ERROR "${LIBRARY} exports symbols outside the public hk_ API:\n  ${bad_text}")
endif()
# The API has well over 100 functions; a handful means visibility broke the
# other way (HK_API not expanding to default visibility).
foreach(required hk_version hk_session_new hk_session_run hk_hook_new hk_graph_new
                 hk_stop_at_step_hook_new hk_executor_new)
  if(NOT out MATCHES " ${required}\n")
    message(FATAL_ERROR "${LIBRARY} does not export ${required}")
  endif()
endforeach()
message(STATUS "${public} hk_ symbols exported, nothing else")

execute_process(COMMAND ${READELF} -d ${LIBRARY} RESULT_VARIABLE rc OUTPUT_VARIABLE dyn)
if(NOT rc EQUAL 0 OR NOT dyn MATCHES "Library soname: \\[${SONAME}\\]")
  message(FATAL_ERROR "${LIBRARY}: SONAME is not ${SONAME}")
endif()
# While the major is 0 the ABI may change with every minor: the SONAME is
# libhooked.so.0.<minor>, the package's (EXPECTED_SONAME).
if(NOT SONAME MATCHES "^libhooked\\.so\\.0\\.[0-9]+$" OR NOT SONAME STREQUAL EXPECTED_SONAME)
  message(FATAL_ERROR "SONAME ${SONAME} is not ${EXPECTED_SONAME} (libhooked.so.0.<minor>)")
endif()
message(STATUS "SONAME ${SONAME}")
