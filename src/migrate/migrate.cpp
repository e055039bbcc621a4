#include <domex/migrate/migrate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace domex {

MigrationPlan::MigrationPlan(Comm& comm, std::vector<int> destinations, std::vector<int> neighbours,
                             MigrationOptions options)
    : comm_(&comm), options_(options), destination_(std::move(destinations)), neighbours_(std::move(neighbours)) {
  std::sort(neighbours_.begin(), neighbours_.end());
  neighbours_.erase(std::unique(neighbours_.begin(), neighbours_.end()), neighbours_.end());
  neighbours_.erase(std::remove(neighbours_.begin(), neighbours_.end(), comm.rank()), neighbours_.end());
  int invalid = -1;
  for (std::size_t i = 0; i < destination_.size() && invalid < 0; ++i)
    if (destination_[i] < 0 || destination_[i] >= comm.size()) invalid = static_cast<int>(i);
  if (invalid >= 0) invalid_position_ = {static_cast<double>(destination_[static_cast<std::size_t>(invalid)]), 0, 0};
  finish_setup(invalid);
}

void MigrationPlan::finish_setup(int invalid_index) {
  // One reduction tells every rank whether some particle anywhere left its
  // neighbourhood (then the general exchange runs) or is invalid (then all
  // ranks throw instead of some hanging).
  int far = 0;
  leaving_ = 0;
  if (invalid_index < 0)
    for (int destination : destination_) {
      if (destination == comm_->rank()) continue;
      ++leaving_;
      if (!std::binary_search(neighbours_.begin(), neighbours_.end(), destination)) far = 1;
    }
  int flags[2] = {far, invalid_index >= 0 ? 1 : 0};
  comm_->allreduce_in_place(std::span<int>(flags), MPI_MAX);
  if (invalid_index >= 0)
    fail("MigrationPlan",
         fmt::format("particle {} has an invalid position or destination ({}, {}, {}): NaN, or outside the domain on "
                     "a non-periodic axis",
                     invalid_index, invalid_position_[0], invalid_position_[1], invalid_position_[2]));
  if (flags[1]) fail("MigrationPlan", "another rank holds a particle with an invalid position; no particle moved");
  neighbour_path_ = options_.neighbour_only && flags[0] == 0;
}

std::vector<std::byte> MigrationPlan::move_records(std::span<const std::byte> records, std::size_t record_bytes) {
  const int rank = comm_->rank();
  const std::size_t count = destination_.size();
  // Group leaving records by destination (ascending), keep the others.
  std::vector<int> ranks;
  std::vector<std::size_t> offsets{0};
  {
    std::vector<int> sorted;
    sorted.reserve(leaving_);
    for (int d : destination_)
      if (d != rank) sorted.push_back(d);
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i)
      if (i == 0 || sorted[i] != sorted[i - 1]) ranks.push_back(sorted[i]);
  }
  std::vector<std::size_t> fill(ranks.size(), 0);
  for (int d : destination_)
    if (d != rank) ++fill[static_cast<std::size_t>(std::lower_bound(ranks.begin(), ranks.end(), d) - ranks.begin())];
  for (std::size_t m = 0; m < ranks.size(); ++m) offsets.push_back(offsets.back() + fill[m] * record_bytes);
  std::vector<std::byte> outgoing(offsets.back());
  std::vector<std::byte> result;
  result.reserve((count - leaving_) * record_bytes);
  std::copy(offsets.begin(), offsets.end() - 1, fill.begin());
  for (std::size_t i = 0; i < count; ++i) {
    const std::byte* record = records.data() + i * record_bytes;
    const int d = destination_[i];
    if (d == rank) {
      result.insert(result.end(), record, record + record_bytes);
      continue;
    }
    auto& at = fill[static_cast<std::size_t>(std::lower_bound(ranks.begin(), ranks.end(), d) - ranks.begin())];
    std::memcpy(outgoing.data() + at, record, record_bytes);
    at += record_bytes;
  }

  stats_ = {};
  contacted_.clear();
  if (neighbour_path_) {
    // Neighbour-only path: the neighbour relation is symmetric, so each rank
    // knows exactly whom to expect from. One message to every neighbour,
    // empty if no particle goes there: its size is the count, so there is
    // one round, and no rank outside the neighbour list is touched.
    stats_.algorithm = Algorithm::automatic;
    const int tag = comm_->next_tag();
    const std::size_t n = neighbours_.size();
    std::vector<MPI_Request> requests;
    requests.reserve(2 * n);
    std::size_t m = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const std::byte* data = outgoing.data();
      std::size_t bytes = 0;
      if (m < ranks.size() && ranks[m] == neighbours_[k]) {
        data += offsets[m];
        bytes = offsets[m + 1] - offsets[m];
        ++m;
        ++stats_.messages_sent;
        stats_.bytes_sent += bytes;
      }
      if (bytes > static_cast<std::size_t>(INT32_MAX)) fail("migrate", "more than INT_MAX bytes to one neighbour");
      MPI_Request request;
      check_mpi(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, neighbours_[k], tag, comm_->get(), &request),
                "MPI_Isend");
      requests.push_back(request);
    }
    std::vector<MPI_Message> messages(n);
    std::vector<int> counts(n);
    std::size_t total = 0;
    for (std::size_t k = 0; k < n; ++k) {
      MPI_Status status;
      check_mpi(MPI_Mprobe(neighbours_[k], tag, comm_->get(), &messages[k], &status), "MPI_Mprobe");
      check_mpi(MPI_Get_count(&status, MPI_BYTE, &counts[k]), "MPI_Get_count");
      total += static_cast<std::size_t>(counts[k]);
    }
    std::size_t at = result.size();
    result.resize(at + total);
    for (std::size_t k = 0; k < n; ++k) {
      MPI_Request request;
      check_mpi(MPI_Imrecv(result.data() + at, counts[k], MPI_BYTE, &messages[k], &request), "MPI_Imrecv");
      requests.push_back(request);
      at += static_cast<std::size_t>(counts[k]);
      if (counts[k]) {
        ++stats_.messages_received;
        stats_.bytes_received += static_cast<std::size_t>(counts[k]);
      }
    }
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
    contacted_ = neighbours_;
    return result;
  }

  // General path: receivers cannot know their senders: sparse exchange.
  Outbox<std::byte> outbox(std::move(ranks), std::move(offsets), std::move(outgoing));
  const auto inbox = exchange(*comm_, outbox, {.algorithm = options_.algorithm});
  stats_ = inbox.stats();
  result.insert(result.end(), inbox.data().begin(), inbox.data().end());
  contacted_.assign(outbox.ranks().begin(), outbox.ranks().end());
  contacted_.insert(contacted_.end(), inbox.sources().begin(), inbox.sources().end());
  std::sort(contacted_.begin(), contacted_.end());
  contacted_.erase(std::unique(contacted_.begin(), contacted_.end()), contacted_.end());
  return result;
}

}  // namespace domex
