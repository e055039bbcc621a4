// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// The MPI defects domex works around, in one place: which library and
// versions, the symptom, what domex does, the ticket and the test that shows
// it. docs/mpi_defects.md is the same table for readers.
//
//   for (const auto& defect : domex::known_mpi_defects())
//     if (domex::affects_this_process(defect.id)) std::puts(defect.name.data());
//   if (auto why = domex::window_collision_risk(comm)) ...   // RMA not offered on comm

#include <domex/comm/comm.hpp>

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace domex {

/// The MPI library this process runs on, from MPI_Get_library_version (the
/// library actually loaded, not the headers compiled against).
struct MpiLibrary {
  enum class Family { open_mpi, mpich, other };
  Family family = Family::other;          ///< "MPICH Version:" in the string counts as mpich
  int major = 0, minor = 0, release = 0;  ///< 0.0.0 where the version was not recognised
  std::string description;                ///< the first line of MPI_Get_library_version
};
/// Parsed once per process; no communication. Safe before MPI_Init.
[[nodiscard]] const MpiLibrary& mpi_library();
/// Parses a MPI_Get_library_version string (exposed for tests).
[[nodiscard]] MpiLibrary parse_mpi_library(std::string_view version);

enum class MpiDefectId {
  ompi_osc_rdma_segment_name,  ///< Open MPI < 5.0: windows of disjoint groups collide
  mpich_win_allocate_put,      ///< MPICH 4.0.x: MPI_Win_allocate misplaces Puts on one node
  nbx_ibarrier_after_2e24,     ///< Open MPI 4.0/4.1: MPI_Ibarrier never completes after ~2^24 calls
};

/// One row of the table.
struct MpiDefect {
  MpiDefectId id;
  std::string_view name;
  std::string_view library;  ///< the library and version range
  std::string_view symptom;
  std::string_view workaround;  ///< what domex does about it
  std::string_view ticket;      ///< the public report
  std::string_view test;        ///< the domex test or tool that shows it
};
/// Every defect domex knows, in MpiDefectId order.
[[nodiscard]] std::span<const MpiDefect> known_mpi_defects() noexcept;

/// Whether `id` applies to this process: the library and version, and for
/// the osc/rdma defect, OMPI_MCA_osc not forcing a component without it
/// ("ucx", "pt2pt", "sm", "^rdma"). Local, no communication.
[[nodiscard]] bool affects_this_process(MpiDefectId id);

/// Why one-sided windows on `comm` could collide with the windows of another
/// group of the same job (ompi_osc_rdma_segment_name), or nothing where they
/// cannot. They cannot where no rank's library has the defect, or where, for
/// every rank of `comm`, every process of the job on its node is in `comm`
/// too: then no disjoint group with the same communicator id shares a node
/// with it. Collective over `comm` on the first call (one
/// MPI_Comm_split_type and one MPI_Allreduce), cached in `comm`: identical on
/// every rank.
[[nodiscard]] const std::optional<std::string>& window_collision_risk(const Comm& comm);

}  // namespace domex
