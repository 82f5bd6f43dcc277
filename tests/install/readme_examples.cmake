# Keeps README.md honest: every code block announced by a marker
#   <!-- example file PATH -->     must equal the file PATH (relative to the source tree);
#   <!-- example excerpt PATH -->  must appear verbatim in PATH.
# The files are built and run by the install_consumer test, so the README's
# examples are compiled and executed code.
#
# Inputs (-D): README, SOURCE_DIR.

cmake_minimum_required(VERSION 3.20)

file(READ "${README}" text)
set(checked 0)
set(fence "```")
while(TRUE)
  string(FIND "${text}" "<!-- example " pos)
  if(pos EQUAL -1)
    break()
  endif()
  string(SUBSTRING "${text}" ${pos} -1 text)
  string(FIND "${text}" "-->" end)
  string(SUBSTRING "${text}" 0 ${end} marker)
  if(NOT marker MATCHES "^<!-- example (file|excerpt) ([^ ]+) *$")
    message(FATAL_ERROR "README.md: malformed marker '${marker}-->'")
  endif()
  set(kind ${CMAKE_MATCH_1})
  set(path ${CMAKE_MATCH_2})

  # The block is the next fenced code block: from the line after its opening
  # fence up to the line that closes it.
  string(FIND "${text}" "${fence}" open)
  if(open EQUAL -1)
    message(FATAL_ERROR "README.md: no code block after the marker for ${path}")
  endif()
  string(SUBSTRING "${text}" ${open} -1 text)
  string(FIND "${text}" "\n" eol)
  math(EXPR start "${eol} + 1")
  string(SUBSTRING "${text}" ${start} -1 text)
  string(FIND "${text}" "\n${fence}" close)
  if(close EQUAL -1)
    message(FATAL_ERROR "README.md: unterminated code block for ${path}")
  endif()
  math(EXPR len "${close} + 1")
  string(SUBSTRING "${text}" 0 ${len} block)
  string(SUBSTRING "${text}" ${len} -1 text)

  if(NOT EXISTS "${SOURCE_DIR}/${path}")
    message(FATAL_ERROR "README.md names ${path}, which does not exist")
  endif()
  file(READ "${SOURCE_DIR}/${path}" source)
  if(kind STREQUAL "file")
    if(NOT block STREQUAL source)
      message(FATAL_ERROR "README.md: the example block differs from ${path}; copy the file into the README")
    endif()
  else()
    string(FIND "${source}" "${block}" found)
    if(found EQUAL -1)
      message(FATAL_ERROR "README.md: the excerpt of ${path} is not in that file:\n${block}")
    endif()
  endif()
  math(EXPR checked "${checked} + 1")
endwhile()

if(checked EQUAL 0)
  message(FATAL_ERROR "README.md has no <!-- example ... --> markers")
endif()
message(STATUS "${checked} README examples match their sources")
