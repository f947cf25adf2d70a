# The commit a binary was built from and its date, for `shmbpf --version`
# and shmbpf_build_info's revision label. Read at build time, not at
# configure time, so that a build after a new commit says the new one.
#
# As a script (cmake -P): writes OUT, a header of two definitions, and only
# when they changed (so that nothing recompiles otherwise).
#   revision  git describe --always --dirty --abbrev=12 of SOURCE_DIR;
#             SHMBPF_REVISION in the environment wins (a build from a
#             tarball); "unknown" without either
#   date      the commit's date (YYYY-MM-DD), or SOURCE_DATE_EPOCH's when
#             set: two builds of one commit are the same bytes
if(CMAKE_SCRIPT_MODE_FILE)
  set(revision "$ENV{SHMBPF_REVISION}")
  set(date "")
  find_package(Git QUIET)
  if(revision STREQUAL "" AND GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} describe --always --dirty --abbrev=12
                    OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(GIT_FOUND)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} log -1 --format=%cd --date=short
                    OUTPUT_VARIABLE date OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(NOT "$ENV{SOURCE_DATE_EPOCH}" STREQUAL "")
    string(TIMESTAMP date "%Y-%m-%d" UTC)
  endif()
  if(revision STREQUAL "")
    set(revision unknown)
  endif()
  if(date STREQUAL "")
    set(date unknown)
  endif()
  string(CONCAT text "// Made by cmake/Revision.cmake at build time.\n#pragma once\n"
         "#define SHMBPF_REVISION \"${revision}\"\n#define SHMBPF_BUILD_DATE \"${date}\"\n")
  if(EXISTS ${OUT})
    file(READ ${OUT} old)
  endif()
  if(NOT "${old}" STREQUAL "${text}")
    file(WRITE ${OUT} "${text}")
  endif()
  return()
endif()

# In the build: a target every build runs, whose header the one file that
# reports the revision includes.
set(SHMBPF_REVISION_HEADER ${CMAKE_BINARY_DIR}/generated/shmbpf_revision.h)
add_custom_target(shmbpf_revision
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR} -DOUT=${SHMBPF_REVISION_HEADER}
          -P ${CMAKE_CURRENT_LIST_FILE}
  BYPRODUCTS ${SHMBPF_REVISION_HEADER}
  COMMENT "shmbpf: the commit built"
  VERBATIM)
