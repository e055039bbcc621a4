// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Mapping from C++ types to MPI datatypes.

#include <mpi.h>

#include <complex>
#include <cstdint>
#include <type_traits>

namespace domex {

/// Types domex can send: trivially copyable, so a byte copy is a valid copy.
template <class T>
concept Sendable = std::is_trivially_copyable_v<T>;

/// The builtin MPI datatype of an arithmetic T (MPI_INT for int, ...), or
/// MPI_DATATYPE_NULL for other types, which domex sends as bytes.
template <class T>
MPI_Datatype builtin_datatype() noexcept {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, char>) return MPI_CHAR;
  else if constexpr (std::is_same_v<U, signed char>) return MPI_SIGNED_CHAR;
  else if constexpr (std::is_same_v<U, unsigned char>) return MPI_UNSIGNED_CHAR;
  else if constexpr (std::is_same_v<U, std::byte>) return MPI_BYTE;
  else if constexpr (std::is_same_v<U, bool>) return MPI_CXX_BOOL;
  else if constexpr (std::is_same_v<U, short>) return MPI_SHORT;
  else if constexpr (std::is_same_v<U, unsigned short>) return MPI_UNSIGNED_SHORT;
  else if constexpr (std::is_same_v<U, int>) return MPI_INT;
  else if constexpr (std::is_same_v<U, unsigned>) return MPI_UNSIGNED;
  else if constexpr (std::is_same_v<U, long>) return MPI_LONG;
  else if constexpr (std::is_same_v<U, unsigned long>) return MPI_UNSIGNED_LONG;
  else if constexpr (std::is_same_v<U, long long>) return MPI_LONG_LONG;
  else if constexpr (std::is_same_v<U, unsigned long long>) return MPI_UNSIGNED_LONG_LONG;
  else if constexpr (std::is_same_v<U, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<U, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<U, long double>) return MPI_LONG_DOUBLE;
  else if constexpr (std::is_same_v<U, std::complex<float>>) return MPI_CXX_FLOAT_COMPLEX;
  else if constexpr (std::is_same_v<U, std::complex<double>>) return MPI_CXX_DOUBLE_COMPLEX;
  else return MPI_DATATYPE_NULL;
}

/// True when T has a builtin MPI datatype (and so can be reduced).
template <class T>
inline constexpr bool has_builtin_datatype = std::is_arithmetic_v<std::remove_cv_t<T>>;

}  // namespace domex
