# The benches' goal lines, shared by their smoke tests: include() this file,
# then call check_goal_lines(<who> <output> <name>...). Each name must have
# exactly one line `goal NAME min=X median=Y max=Z` in the output, with
# min <= median <= max; the three values are returned to the caller as
# GOAL_<NAME>_MIN, GOAL_<NAME>_MEDIAN and GOAL_<NAME>_MAX.
function(check_goal_lines who out)
  set(number "-?[0-9]+(\\.[0-9]+)?")
  foreach(name IN LISTS ARGN)
    string(REGEX MATCHALL "\ngoal ${name} min=${number} median=${number} max=${number}\n" lines "${out}")
    list(LENGTH lines n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "${who}: ${n} lines 'goal ${name} min=X median=Y max=Z', expected one:\n${out}")
    endif()
    string(REGEX MATCH "min=(${number}) median=(${number}) max=(${number})" _ "${lines}")
    set(lo "${CMAKE_MATCH_1}")
    set(med "${CMAKE_MATCH_3}")
    set(hi "${CMAKE_MATCH_5}")
    if(lo GREATER med OR med GREATER hi)
      message(FATAL_ERROR "${who}: goal ${name}: min ${lo}, median ${med}, max ${hi} are out of order")
    endif()
    set(GOAL_${name}_MIN "${lo}" PARENT_SCOPE)
    set(GOAL_${name}_MEDIAN "${med}" PARENT_SCOPE)
    set(GOAL_${name}_MAX "${hi}" PARENT_SCOPE)
  endforeach()
endfunction()
