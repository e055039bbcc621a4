// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Sums of small arrays of complex numbers over all ranks: the dot products of
// a Krylov solver. The non-blocking form lets a solver overlap the reduction
// with computation or with the next halo exchange.
//
//   std::array<std::complex<double>, 2> dots{dot(r, r), dot(p, q)};
//   auto pending = domex::iallreduce(comm, std::span(dots));   // MPI_Iallreduce
//   x += alpha * p;                                             // overlapped work
//   pending.wait();                                             // dots now global

#include <domex/comm/comm.hpp>

#include <complex>
#include <span>

namespace domex {

/// Collective over `comm`: replaces `values` by their element-wise sum over
/// all ranks (MPI_Allreduce, MPI_SUM, in place). Every rank must pass the same
/// number of values (MPI cannot check that cheaply; a mismatch is an MPI
/// error). The order of the sum over ranks is MPI's: equal on every rank, not
/// necessarily the serial order.
void allreduce(const Comm& comm, std::span<std::complex<double>> values);

/// A non-blocking complex sum in flight. `values` must stay alive and
/// untouched until wait() returns. Move-only; the destructor waits if wait()
/// was not called (so a thrown exception cannot leave MPI writing into freed
/// memory).
class AllreduceRequest {
 public:
  AllreduceRequest() = default;
  AllreduceRequest(AllreduceRequest&& other) noexcept;
  AllreduceRequest& operator=(AllreduceRequest&& other) noexcept;
  AllreduceRequest(const AllreduceRequest&) = delete;
  AllreduceRequest& operator=(const AllreduceRequest&) = delete;
  ~AllreduceRequest();
  /// Completes the sum; afterwards `values` holds it. Idempotent.
  void wait();
  /// True once the sum is complete (MPI_Test); never blocks.
  [[nodiscard]] bool ready();

 private:
  friend AllreduceRequest iallreduce(const Comm&, std::span<std::complex<double>>);
  MPI_Request request_ = MPI_REQUEST_NULL;
};

/// Collective over `comm`: starts the sum of allreduce() with MPI_Iallreduce.
[[nodiscard]] AllreduceRequest iallreduce(const Comm& comm, std::span<std::complex<double>> values);

}  // namespace domex
