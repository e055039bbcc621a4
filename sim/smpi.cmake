# SPDX-License-Identifier: BSD-3-Clause
# -DDOMEX_SMPI=ON: build domex for SimGrid's SMPI (configure with
# -DCMAKE_CXX_COMPILER=smpicxx -DCMAKE_C_COMPILER=smpicc); see sim/README.md.
# smpicxx links every program as a shared object that smpirun loads once per
# simulated rank (dlopen privatization); -fno-gnu-unique keeps GCC's unique
# statics (function-local statics of inline functions, templates) per rank.
# The compatibility layer sim/compat/ is force-included into every domex
# source: the library's code is unchanged, and a normal build never sees it.
if(NOT MPI_CXX_COMPILER MATCHES "smpicxx" AND NOT CMAKE_CXX_COMPILER MATCHES "smpicxx")
  message(FATAL_ERROR "DOMEX_SMPI needs -DCMAKE_CXX_COMPILER=smpicxx -DCMAKE_C_COMPILER=smpicc")
endif()
target_compile_definitions(domex_flags INTERFACE DOMEX_SMPI SMPI_NO_OVERRIDE_MALLOC)
target_compile_options(domex_flags INTERFACE -fno-gnu-unique
                       "SHELL:-include ${PROJECT_SOURCE_DIR}/sim/compat/smpi_compat.hpp")

add_library(domex_smpi_compat STATIC ${PROJECT_SOURCE_DIR}/sim/compat/smpi_compat.cpp)
target_link_libraries(domex_smpi_compat PUBLIC MPI::MPI_CXX)
target_compile_definitions(domex_smpi_compat PRIVATE SMPI_NO_OVERRIDE_MALLOC)
target_compile_options(domex_smpi_compat PRIVATE -fno-gnu-unique -Wall -Wextra -Wpedantic
                       $<$<BOOL:${DOMEX_WERROR}>:-Werror>)
set_target_properties(domex_smpi_compat PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(domex_comm PUBLIC $<BUILD_INTERFACE:domex_smpi_compat>)

# Programs of sim/ (correctness check, count-exchange benchmark, ping-pong,
# the simulator's own cost per round of messages).
# Each links only the layer it uses, so that the CI stage (sim/ci.sh) builds
# comm and exchange, not the tree's kernels or the other layers.
if(DOMEX_BUILD_BENCH)
  foreach(program IN ITEMS check counts pingpong rounds)
    add_executable(domex-sim-${program} ${PROJECT_SOURCE_DIR}/sim/${program}.cpp)
    target_link_libraries(domex-sim-${program} PRIVATE domex_flags)
  endforeach()
  target_link_libraries(domex-sim-check PRIVATE domex::exchange)
  target_link_libraries(domex-sim-counts PRIVATE domex::exchange)
  target_link_libraries(domex-sim-pingpong PRIVATE domex::comm)
  target_link_libraries(domex-sim-rounds PRIVATE domex::comm)
endif()
