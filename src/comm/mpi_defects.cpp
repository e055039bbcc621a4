// SPDX-License-Identifier: BSD-3-Clause
// Known MPI defects: the table, the library version, and the window-collision
// check behind domex's RMA algorithms. docs/mpi_defects.md says the same for
// readers; keep the two in step.

#include <domex/comm/mpi_defects.hpp>

#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace domex {

namespace {

constexpr std::array<MpiDefect, 3> defects = {{
    {MpiDefectId::ompi_osc_rdma_segment_name, "Open MPI osc/rdma: windows of disjoint groups collide",
     "Open MPI < 5.0 (4.1.4 here) with osc/rdma, its default one-sided component",
     "MPI_Win_allocate / MPI_Win_create on two disjoint communicators of one MPI_Comm_split return "
     "MPI_ERR_WIN, or a rank dies of SIGBUS: osc/rdma names its node segment osc_rdma.<node>.<job>.<cid> and "
     "the groups of a split share the communicator id, so one group truncates the file the other maps",
     "RMA is not offered on a communicator that does not hold every process of the job on each of its nodes "
     "(window_collision_risk): a named rma_fence runs alltoall, rma_passive runs nbx, automatic skips both; "
     "OMPI_MCA_osc=ucx, pt2pt or ^rdma lifts it",
     "open-mpi/ompi#9492 (fixed in 5.0 by open-mpi/ompi#9495)",
     "tests/exchange/sub_communicators.cpp, tests/comm/mpi_defects.cpp; without domex: "
     "shared/repro/split_windows.cpp"},
    {MpiDefectId::mpich_win_allocate_put, "MPICH MPI_Win_allocate: Puts land in the wrong rank's window",
     "MPICH 4.0.x (seen on 4.0.2, Debian 12); later versions not checked",
     "between ranks of one node an MPI_Put to rank 1 of a window from MPI_Win_allocate landed in rank 0's "
     "window: rma_fence and rma_passive delivered wrong inboxes",
     "windows are MPI_Win_create over memory domex allocates, on every MPI but Open MPI (whose "
     "MPI_Win_create needs an RMA transport a single process lacks)",
     "none filed from domex", "tests/exchange/exchange.cpp (every algorithm, identical inboxes) under MPICH"},
    {MpiDefectId::nbx_ibarrier_after_2e24, "Open MPI MPI_Ibarrier: NBX hangs after ~16.7 million calls",
     "Open MPI 4.0.3 and 4.1.1 as reported, on one cluster's network (not on a workstation)",
     "after about 2^24 back-to-back NBX exchanges on one communicator every rank has entered MPI_Ibarrier "
     "but MPI_Test never reports it complete: a hang",
     "nothing: not reproduced here (2^24 + 10^5 NBX calls at np 2, Open MPI 4.1.4, shared memory: no hang); "
     "the reported workarounds are a fresh communicator per call, or MPI_Probe where the pattern is known",
     "dealii/dealii#14405, open-mpi/ompi#11052", "domex-bench soak --calls 16877216 --algorithms nbx (not in CI)"},
}};

/// Whether OMPI_MCA_osc (a comma list, "^" excluding) leaves osc/rdma selectable.
bool rdma_selectable(const char* setting) {
  if (!setting || !*setting) return true;
  std::string_view list = setting;
  const bool excluding = list.front() == '^';
  if (excluding) list.remove_prefix(1);
  bool named = false;
  while (!list.empty()) {
    const auto comma = list.find(',');
    named = named || list.substr(0, comma) == "rdma";
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
  }
  return excluding ? !named : named;
}

/// The job's processes on this node, where the launcher says (Open MPI's
/// mpirun and its PMIx direct launch set OMPI_COMM_WORLD_LOCAL_SIZE); 0 if unknown.
int job_processes_on_node() {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  return local ? std::atoi(local) : 0;
}

struct CollisionRisk {
  explicit CollisionRisk(Comm& comm) {
    // Every rank splits (the same collectives whatever each rank concludes);
    // one allreduce then agrees: [some rank has the defect, some rank's node
    // holds processes of the job outside comm].
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int on_node = 1;
    const int size_rc = MPI_Comm_size(node, &on_node);
    MPI_Comm_free(&node);
    check_mpi(size_rc, "MPI_Comm_size");
    int world = 1;
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
    const int job_on_node = job_processes_on_node();
    // Unknown node population: only a communicator of the whole job is safe.
    const bool covered = job_on_node > 0 ? on_node >= job_on_node : comm.size() == world;
    int flags[2] = {affects_this_process(MpiDefectId::ompi_osc_rdma_segment_name) ? 1 : 0, covered ? 0 : 1};
    comm.allreduce_in_place(std::span<int>(flags), MPI_MAX);
    if (flags[0] && flags[1]) {
      const MpiLibrary& library = mpi_library();
      reason = fmt::format(
          "Open MPI {}.{}.{} with osc/rdma: windows on a communicator that shares a node with other processes of "
          "the job can collide with another group's (open-mpi/ompi#9492, fixed in Open MPI 5.0); "
          "OMPI_MCA_osc=ucx or pt2pt allows RMA here",
          library.major, library.minor, library.release);
    }
  }
  std::optional<std::string> reason;
};

}  // namespace

MpiLibrary parse_mpi_library(std::string_view version) {
  MpiLibrary library;
  library.description = std::string(version.substr(0, version.find('\n')));
  while (!library.description.empty() && (library.description.back() == ' ' || library.description.back() == '\r'))
    library.description.pop_back();
  std::size_t at = std::string_view::npos;
  if (const auto open = version.find("Open MPI v"); open != std::string_view::npos) {
    library.family = MpiLibrary::Family::open_mpi;
    at = open + 10;
  } else if (const auto mpich = version.find("MPICH Version:"); mpich != std::string_view::npos) {
    library.family = MpiLibrary::Family::mpich;
    at = version.find_first_of("0123456789", mpich + 14);
  }
  if (at != std::string_view::npos && at < version.size()) {
    const std::string digits(version.substr(at, 32));
    if (std::sscanf(digits.c_str(), "%d.%d.%d", &library.major, &library.minor, &library.release) < 1)
      library.major = library.minor = library.release = 0;
  }
  return library;
}

const MpiLibrary& mpi_library() {
  static const MpiLibrary library = [] {
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    MPI_Get_library_version(version, &length);
    return parse_mpi_library(std::string_view(version, static_cast<std::size_t>(length)));
  }();
  return library;
}

std::span<const MpiDefect> known_mpi_defects() noexcept { return defects; }

bool affects_this_process(MpiDefectId id) {
  const MpiLibrary& library = mpi_library();
  switch (id) {
    case MpiDefectId::ompi_osc_rdma_segment_name:
      return library.family == MpiLibrary::Family::open_mpi && library.major < 5 &&
             rdma_selectable(std::getenv("OMPI_MCA_osc"));
    case MpiDefectId::mpich_win_allocate_put:
      return library.family == MpiLibrary::Family::mpich && library.major == 4 && library.minor == 0;
    case MpiDefectId::nbx_ibarrier_after_2e24:
      return library.family == MpiLibrary::Family::open_mpi && library.major == 4;
  }
  return false;
}

const std::optional<std::string>& window_collision_risk(const Comm& comm) { return comm.cached<CollisionRisk>().reason; }

}  // namespace domex
