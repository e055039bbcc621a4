# SPDX-License-Identifier: BSD-3-Clause
# cmake -DSOURCE=<tree> -DOUTPUT=<header> -P git_commit.cmake
# Writes `#define DOMEX_GIT_COMMIT "<commit>"` (the commit SOURCE is at, or
# "unknown" outside git) into OUTPUT, touching it only when the commit
# changed. Run at every build (target domex_git_commit), so that an
# incremental build after a pull or a commit records the new commit, not the
# one CMake was configured at.
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY "${SOURCE}"
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
endif()
set(text "#define DOMEX_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUTPUT}" "${text}")
endif()
