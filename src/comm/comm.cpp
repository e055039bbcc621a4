// SPDX-License-Identifier: BSD-3-Clause
#include <domex/comm/comm.hpp>

#include <fmt/format.h>

#include <climits>

namespace domex {

Comm::Comm(MPI_Comm user) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) fail("Comm", "MPI is not initialised (call MPI_Init first)");
  if (user == MPI_COMM_NULL) fail("Comm", "MPI_COMM_NULL given");
  MPI_Comm dup = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(user, &dup), "MPI_Comm_dup");
  init_from(dup);
}

Comm Comm::adopt(MPI_Comm owned) {
  if (owned == MPI_COMM_NULL) fail("Comm::adopt", "MPI_COMM_NULL given");
  Comm comm;
  comm.init_from(owned);
  return comm;
}

void Comm::init_from(MPI_Comm comm) {
  comm_ = comm;
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  // Tags [0, tag_cycle) are ours (the communicator is our duplicate); MPI
  // guarantees a tag upper bound of at least 32767.
  int* tag_ub = nullptr;
  int flag = 0;
  check_mpi(MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &flag), "MPI_Comm_get_attr(MPI_TAG_UB)");
  const int upper = flag ? *tag_ub : 32767;
  if (upper < tag_cycle) fail("Comm", fmt::format("MPI_TAG_UB {} is below the {} tags domex needs", upper, tag_cycle));
}

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      rank_(other.rank_),
      size_(other.size_),
      calls_(other.calls_),
      cache_(std::move(other.cache_)) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    calls_ = other.calls_;
    cache_ = std::move(other.cache_);
  }
  return *this;
}

Comm::~Comm() { release(); }

void Comm::release() noexcept {
  while (!cache_.empty()) cache_.pop_back();  // reverse order of creation
  if (comm_ != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
    comm_ = MPI_COMM_NULL;
  }
}

int Comm::next_tag() noexcept {
  return static_cast<int>(calls_++ % static_cast<std::uint64_t>(tag_cycle));
}

void Comm::barrier() const { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

void Comm::allgatherv_bytes(const void* data, std::size_t bytes, std::vector<std::byte>& out,
                            std::vector<std::size_t>& offsets) const {
  // 64-bit sizes first, so that every rank sees every size and reaches the
  // same verdict: a too-large part on one rank is an error on all of them.
  const auto mine = static_cast<std::uint64_t>(bytes);
  std::vector<std::uint64_t> sizes(static_cast<std::size_t>(size_));
  check_mpi(MPI_Allgather(&mine, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, comm_), "MPI_Allgather");
  offsets.assign(sizes.size() + 1, 0);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] > static_cast<std::uint64_t>(INT_MAX))
      throw Error(fmt::format("domex: rank {}: Comm::allgatherv: rank {} of the communicator contributes {} bytes, "
                              "more than INT_MAX",
                              world_rank(), i, sizes[i]));
    offsets[i + 1] = offsets[i] + static_cast<std::size_t>(sizes[i]);
  }
  if (offsets.back() > static_cast<std::size_t>(INT_MAX))
    fail("Comm::allgatherv", fmt::format("{} bytes in total exceed INT_MAX", offsets.back()));
  std::vector<int> counts(sizes.size()), displacements(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    counts[i] = static_cast<int>(sizes[i]);
    displacements[i] = static_cast<int>(offsets[i]);
  }
  out.resize(offsets.back());
  check_mpi(MPI_Allgatherv(data, counts[static_cast<std::size_t>(rank_)], MPI_BYTE, out.data(), counts.data(),
                           displacements.data(), MPI_BYTE, comm_),
            "MPI_Allgatherv");
}

}  // namespace domex
