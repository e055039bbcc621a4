// SPDX-License-Identifier: BSD-3-Clause
#include <domex/migrate/migrate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace domex {

MigrationPlan::MigrationPlan(Comm& comm, std::vector<int> destinations, std::vector<int> neighbours,
                             MigrationOptions options)
    : comm_(&comm), options_(options), destination_(std::move(destinations)), neighbours_(std::move(neighbours)) {
  finish_setup([&](std::size_t i) {
    return fmt::format("particle {} has destination {}, not a rank in [0, {})", i, destination_[i], comm.size());
  });
}

void MigrationPlan::finish_setup(const std::function<std::string(std::size_t)>& describe_invalid) {
  std::sort(neighbours_.begin(), neighbours_.end());
  neighbours_.erase(std::unique(neighbours_.begin(), neighbours_.end()), neighbours_.end());
  neighbours_.erase(std::remove(neighbours_.begin(), neighbours_.end(), comm_->rank()), neighbours_.end());
  // One reduction tells every rank whether a particle anywhere is invalid
  // (then all ranks throw instead of some hanging) or left its
  // neighbourhood (then the general exchange runs).
  const int rank = comm_->rank(), size = comm_->size();
  double far = 0;
  agree(*comm_, "MigrationPlan", [&] {
    leavers_.clear();
    for (std::size_t i = 0; i < destination_.size(); ++i) {
      const int d = destination_[i];
      if (d == rank) continue;  // the common case: one compare
      if (d < 0 || d >= size) fail("MigrationPlan", describe_invalid(i));
      leavers_.push_back(i);
      if (!std::binary_search(neighbours_.begin(), neighbours_.end(), d)) far = 1;
    }
  }, std::span<double>(&far, 1));
  neighbour_path_ = options_.neighbour_only && far == 0;
  // Leavers grouped by destination (counting sort over the few destinations).
  ranks_.clear();
  for (std::size_t i : leavers_) ranks_.push_back(destination_[i]);
  std::sort(ranks_.begin(), ranks_.end());
  ranks_.erase(std::unique(ranks_.begin(), ranks_.end()), ranks_.end());
  record_offsets_.assign(ranks_.size() + 1, 0);
  const auto slot = [&](int d) {
    return static_cast<std::size_t>(std::lower_bound(ranks_.begin(), ranks_.end(), d) - ranks_.begin());
  };
  for (std::size_t i : leavers_) ++record_offsets_[slot(destination_[i]) + 1];
  for (std::size_t m = 0; m < ranks_.size(); ++m) record_offsets_[m + 1] += record_offsets_[m];
  send_order_.resize(leavers_.size());
  std::vector<std::size_t> fill(record_offsets_.begin(), record_offsets_.end() - 1);
  for (std::size_t i : leavers_) send_order_[fill[slot(destination_[i])]++] = i;
}

std::vector<std::byte> MigrationPlan::move_records(std::span<const std::byte> records, std::size_t record_bytes) {
  agree(*comm_, "MigrationPlan::move_records", [&] {
    if (records.size() != destination_.size() * record_bytes)
      fail("MigrationPlan::move_records",
           fmt::format("{} bytes of records for {} particles of {} bytes", records.size(), destination_.size(),
                       record_bytes));
  });
  std::vector<std::byte> packed(send_order_.size() * record_bytes);
  for (std::size_t m = 0; m < send_order_.size(); ++m)
    std::memcpy(packed.data() + m * record_bytes, records.data() + send_order_[m] * record_bytes, record_bytes);
  const auto arrived = exchange_packed(packed, record_bytes);
  std::vector<std::byte> result;
  result.reserve(records.size() - packed.size() + arrived.size());
  std::size_t next = 0;
  for (std::size_t m = 0; m <= leavers_.size(); ++m) {
    const std::size_t end = m < leavers_.size() ? leavers_[m] : destination_.size();
    result.insert(result.end(), records.begin() + static_cast<std::ptrdiff_t>(next * record_bytes),
                  records.begin() + static_cast<std::ptrdiff_t>(end * record_bytes));
    next = end + 1;
  }
  result.insert(result.end(), arrived.begin(), arrived.end());
  return result;
}

std::vector<std::byte> MigrationPlan::exchange_leavers(std::span<const std::byte> packed, std::size_t record_bytes) {
  agree(*comm_, "MigrationPlan::exchange_leavers", [&] {
    if (packed.size() != send_order_.size() * record_bytes)
      fail("MigrationPlan::exchange_leavers",
           fmt::format("{} bytes for {} leavers of {} bytes", packed.size(), send_order_.size(), record_bytes));
  });
  return exchange_packed(packed, record_bytes);
}

std::vector<std::byte> MigrationPlan::exchange_packed(std::span<const std::byte> packed, std::size_t record_bytes) {
  std::vector<int> ranks = ranks_;
  std::vector<std::size_t> offsets(record_offsets_.size());
  for (std::size_t m = 0; m < offsets.size(); ++m) offsets[m] = record_offsets_[m] * record_bytes;
  const std::byte* outgoing_data = packed.data();
  std::vector<std::byte> result;
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
      const std::byte* data = outgoing_data;
      std::size_t bytes = 0;
      if (m < ranks.size() && ranks[m] == neighbours_[k]) {
        data = outgoing_data + offsets[m];
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
  Outbox<std::byte> outbox(std::move(ranks), std::move(offsets), std::vector<std::byte>(packed.begin(), packed.end()));
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
