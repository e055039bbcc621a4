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
#include <vector>

namespace domex {

/// How allreduce() sums over the ranks.
enum class ReduceMethod {
  /// One MPI_Allreduce over the communicator (the MPI library's algorithm).
  mpi,
  /// An MPI_Allreduce along each axis of a process grid in turn (the first
  /// axis, then the second, ...), over sub-communicators created once per
  /// grid and Comm: every step talks to the ranks of one line only, which on
  /// a torus or crossbar network are the link neighbours (the topology-aware
  /// sum of the lattice QCD seed). Which is faster depends on the network and
  /// the MPI: see sim/README.md ("Allreduce by dimension").
  by_dimension,
  /// Times both on the first calls of the Comm (alternating, 8 calls each),
  /// then keeps the faster by the slowest rank's median: the same choice on
  /// every rank (one extra MPI_Allreduce, once). Results agree to rounding
  /// with either; `grid` as for by_dimension.
  automatic,
};

/// Options of allreduce().
struct ReduceOptions {
  ReduceMethod method = ReduceMethod::mpi;
  /// by_dimension: the process grid, first axis slowest (rank = the
  /// row-major index of its coordinates, as MPI_Cart_create numbers ranks
  /// without reordering); its product must be the number of ranks. Empty:
  /// MPI_Dims_create(size, 3). The same on every rank.
  std::vector<int> grid{};
};

/// Collective over `comm`: replaces `values` by their element-wise sum over
/// all ranks (MPI_Allreduce, MPI_SUM, in place). Every rank must pass the same
/// number of values (MPI cannot check that cheaply; a mismatch is an MPI
/// error). The order of the sum over ranks is MPI's: equal on every rank, not
/// necessarily the serial order.
void allreduce(const Comm& comm, std::span<std::complex<double>> values);

/// Which method `automatic` chose on `comm` (mpi or by_dimension), or
/// automatic while it is still timing them.
[[nodiscard]] ReduceMethod automatic_reduce_choice(const Comm& comm);

/// Collective over `comm`: allreduce() by `options.method`. by_dimension
/// sums in another order than mpi (results agree to rounding), and the
/// result is the same on every rank where MPI_Allreduce returns the same
/// result on communicators of the same size (Open MPI and MPICH choose their
/// algorithm by size and count). The first call with a grid is collective
/// in creating its sub-communicators, and a grid whose product is not the
/// number of ranks, or with an entry < 1, is a domex::Error on every rank.
void allreduce(const Comm& comm, std::span<std::complex<double>> values, const ReduceOptions& options);

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
