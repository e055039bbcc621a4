# SPDX-License-Identifier: BSD-3-Clause
# Compiler flags shared by every domex target.
add_library(domex_flags INTERFACE)
target_compile_options(domex_flags INTERFACE
  $<$<CXX_COMPILER_ID:GNU,Clang>:-Wall -Wextra -Wpedantic>
  $<$<AND:$<BOOL:${DOMEX_WERROR}>,$<CXX_COMPILER_ID:GNU,Clang>>:-Werror>
  # Box tests combine comparisons with & on purpose: branch-free, so that they vectorise.
  $<$<AND:$<CXX_COMPILER_ID:Clang>,$<VERSION_GREATER_EQUAL:$<CXX_COMPILER_VERSION>,14>>:-Wno-bitwise-instead-of-logical>)
if(DOMEX_SANITIZE)
  target_compile_options(domex_flags INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(domex_flags INTERFACE -fsanitize=address,undefined)
  if(DOMEX_SANITIZE_SKIP)
    target_compile_options(domex_flags INTERFACE -fno-sanitize=${DOMEX_SANITIZE_SKIP})
  endif()
endif()
if(DOMEX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "DOMEX_FUZZ needs clang (-DCMAKE_CXX_COMPILER=clang++) for libFuzzer")
  endif()
  target_compile_options(domex_flags INTERFACE -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer)
  target_link_options(domex_flags INTERFACE -fsanitize=address,undefined)
endif()
install(TARGETS domex_flags EXPORT domexTargets)

# domex_add_layer(NAME <layer> DEPENDS <other layers>)
# Builds src/<layer>/*.cpp into the static library domex_<layer> (alias
# domex::<layer>) and adds it to the installed export set.
function(domex_add_layer)
  cmake_parse_arguments(ARG "" "NAME" "DEPENDS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${ARG_NAME}/*.cpp)
  add_library(domex_${ARG_NAME} STATIC ${sources})
  add_library(domex::${ARG_NAME} ALIAS domex_${ARG_NAME})
  target_include_directories(domex_${ARG_NAME} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(domex_${ARG_NAME} PUBLIC MPI::MPI_CXX fmt::fmt)
  target_link_libraries(domex_${ARG_NAME} PRIVATE $<BUILD_INTERFACE:domex_flags>)
  foreach(dep IN LISTS ARG_DEPENDS)
    target_link_libraries(domex_${ARG_NAME} PUBLIC domex_${dep})
  endforeach()
  set_target_properties(domex_${ARG_NAME} PROPERTIES EXPORT_NAME ${ARG_NAME} POSITION_INDEPENDENT_CODE ON)
  install(TARGETS domex_${ARG_NAME} EXPORT domexTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  set_property(GLOBAL APPEND PROPERTY DOMEX_LAYERS domex_${ARG_NAME})
endfunction()

# MPI launch settings for tests and scripts. Open MPI needs --oversubscribe to
# run more ranks than cores (CI runs np = 8 on 2 cores); MPICH's hydra does not.
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _domex_mpiexec_version ERROR_QUIET)
if(_domex_mpiexec_version MATCHES "Open MPI|OpenRTE")
  set(DOMEX_MPIEXEC_PREFLAGS "--oversubscribe" CACHE STRING "Flags after -n N for tests")
else()
  set(DOMEX_MPIEXEC_PREFLAGS "" CACHE STRING "Flags after -n N for tests")
endif()
set(DOMEX_TEST_NPROCS "1;2;3;4;8" CACHE STRING "Process counts every MPI test runs at")
# OMP_WAIT_POLICY=passive: OpenMP threads of oversubscribed ranks (np 8 x 2
# threads on 2 cores) otherwise spin at every barrier for the core another
# rank needs; test_ring.np8 took 239 s with spinning threads, 3 s without.
# odls_base_sigkill_timeout=0: Open MPI's mpirun otherwise waits 1-2 s
# before it ends a job whose ranks exit with a nonzero status (the exit
# status stays): the app CLI tests check ~60 bad inputs that way.
set(DOMEX_TEST_ENVIRONMENT
  "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none;OMPI_MCA_odls_base_sigkill_timeout=0;OMP_WAIT_POLICY=passive"
  CACHE STRING "Environment for MPI tests")

# domex_add_mpi_test(NAME <name> SOURCES <files> LIBS <targets> [NPROCS <n...>] [TIMEOUT s])
# One GoogleTest executable, registered with ctest once per process count as
# <name>.np<N>; the exit code is reduced over all ranks (tests/mpi_main.cpp).
function(domex_add_mpi_test)
  cmake_parse_arguments(ARG "" "NAME;TIMEOUT" "SOURCES;LIBS;NPROCS" ${ARGN})
  if(NOT ARG_NPROCS)
    set(ARG_NPROCS ${DOMEX_TEST_NPROCS})
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${ARG_NAME} ${ARG_SOURCES})
  target_link_libraries(${ARG_NAME} PRIVATE domex_test_main ${ARG_LIBS} domex_flags)
  foreach(np IN LISTS ARG_NPROCS)
    separate_arguments(_pre UNIX_COMMAND "${DOMEX_MPIEXEC_PREFLAGS}")
    add_test(NAME ${ARG_NAME}.np${np}
             COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${_pre} ${MPIEXEC_PREFLAGS}
                     $<TARGET_FILE:${ARG_NAME}> ${MPIEXEC_POSTFLAGS})
    set_tests_properties(${ARG_NAME}.np${np} PROPERTIES
      TIMEOUT ${ARG_TIMEOUT} PROCESSORS ${np} ENVIRONMENT "${DOMEX_TEST_ENVIRONMENT}"
      LABELS "mpi;np${np}")
  endforeach()
endfunction()
