// SPDX-License-Identifier: BSD-3-Clause
// grid: a two-level exchange over an R x C process grid (KaMPIng's grid
// alltoall; Bienz et al. 2023 for the locality-aware variants). A message
// from (row rs, column cs) to (rd, cd) travels first along the source's row
// to (rs, cd), then along column cd to its destination. Each hop is an
// exchange among the C ranks of a row or the R ranks of a column: O(sqrt P)
// partners and counts instead of O(P), at the price of forwarding every byte
// once. Messages carry a (source, destination, bytes) header so the receiver
// rebuilds exactly the inbox of the direct algorithms.
//
// C is the largest divisor of P not above sqrt(P) (R = P / C), so the grid is
// complete; for a prime P that is 1 x P (no gain, still correct).

#include "detail.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace domex::detail {

namespace {

struct Header {
  std::int32_t source;
  std::int32_t destination;
  std::uint64_t bytes;
};

constexpr std::uint64_t failed_mark = UINT64_MAX;

/// The row and column communicators of a Comm, split once on first use.
struct GridComms {
  explicit GridComms(Comm& comm) {
    const int size = comm.size();
    columns = 1;
    for (int c = 1; c * c <= size; ++c)
      if (size % c == 0) columns = c;
    const int row_index = comm.rank() / columns, column_index = comm.rank() % columns;
    MPI_Comm split = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm.get(), row_index, column_index, &split), "MPI_Comm_split(row)");
    row = std::make_unique<Comm>(Comm::adopt(split));
    check_mpi(MPI_Comm_split(comm.get(), column_index, row_index, &split), "MPI_Comm_split(column)");
    column = std::make_unique<Comm>(Comm::adopt(split));
  }
  int columns = 1;
  std::unique_ptr<Comm> row, column;  // rank in row = column index, rank in column = row index
};

/// One hop: every member of `group` sends buffer[m] to member m (self copied
/// locally). Counts first (MPI_Alltoall of 64-bit sizes, failed_mark from a
/// rank that knows of a failure), then the data point-to-point in pieces.
/// Returns whether any member reported a failure; then no data moves.
bool hop(const Comm& group, std::vector<std::vector<std::byte>>& outgoing, std::vector<std::vector<std::byte>>& incoming,
         bool failed, int tag, std::size_t piece) {
  const auto members = static_cast<std::size_t>(group.size());
  std::vector<std::uint64_t> send_counts(members), receive_counts(members);
  for (std::size_t m = 0; m < members; ++m) send_counts[m] = failed ? failed_mark : outgoing[m].size();
  check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_UINT64_T, receive_counts.data(), 1, MPI_UINT64_T, group.get()),
            "MPI_Alltoall");
  if (failed || std::find(receive_counts.begin(), receive_counts.end(), failed_mark) != receive_counts.end())
    return true;
  const auto me = static_cast<std::size_t>(group.rank());
  incoming.resize(members);
  std::vector<MPI_Request> requests;
  for (std::size_t m = 0; m < members; ++m) {
    if (m == me) {
      incoming[m].swap(outgoing[m]);  // to self: no copy
      continue;
    }
    incoming[m].resize(receive_counts[m]);
    const std::size_t bytes = receive_counts[m];
    for (std::size_t p = 0, pieces = piece_count(bytes, piece); p < pieces; ++p) {
      const std::size_t begin = p * piece;
      MPI_Request request;
      check_mpi(MPI_Irecv(incoming[m].data() + begin, static_cast<int>(std::min(piece, bytes - begin)), MPI_BYTE,
                          static_cast<int>(m), tag, group.get(), &request),
                "MPI_Irecv");
      requests.push_back(request);
    }
  }
  for (std::size_t m = 0; m < members; ++m) {
    if (m == me) continue;
    const std::size_t bytes = outgoing[m].size();
    for (std::size_t p = 0, pieces = piece_count(bytes, piece); p < pieces; ++p) {
      const std::size_t begin = p * piece;
      MPI_Request request;
      check_mpi(MPI_Isend(outgoing[m].data() + begin, static_cast<int>(std::min(piece, bytes - begin)), MPI_BYTE,
                          static_cast<int>(m), tag, group.get(), &request),
                "MPI_Isend");
      requests.push_back(request);
    }
  }
  wait_all(requests, "MPI_Waitall");
  return false;
}

void append_record(std::vector<std::byte>& buffer, const Header& header, const std::byte* payload) {
  const std::size_t at = buffer.size();
  buffer.resize(at + sizeof(Header) + header.bytes);
  std::memcpy(buffer.data() + at, &header, sizeof(Header));
  if (header.bytes) std::memcpy(buffer.data() + at + sizeof(Header), payload, header.bytes);
}

/// Calls `each(header, payload)` for every record in `buffer`.
template <class Each>
void for_each_record(const std::vector<std::byte>& buffer, Each&& each) {
  for (std::size_t at = 0; at < buffer.size();) {
    Header header;
    std::memcpy(&header, buffer.data() + at, sizeof(Header));
    each(header, buffer.data() + at + sizeof(Header));
    at += sizeof(Header) + header.bytes;
  }
}

}  // namespace

void run_grid(Call& call) {
  auto& grid = call.comm.cached<GridComms>();
  const int columns = grid.columns;
  const int rank = call.comm.rank();
  const auto row_members = static_cast<std::size_t>(grid.row->size());
  const auto column_members = static_cast<std::size_t>(grid.column->size());

  // Hop 1, along the row: to the member in the destination's column.
  std::vector<std::vector<std::byte>> outgoing(row_members), incoming;
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    if (call.to_self(i)) continue;
    const int destination = call.send.ranks[i];
    append_record(outgoing[static_cast<std::size_t>(destination % columns)],
                  {rank, destination, static_cast<std::uint64_t>(call.bytes(i))}, call.payload(i));
    ++call.stats.messages_sent;
    call.stats.bytes_sent += call.bytes(i);
  }
  bool failed = hop(*grid.row, outgoing, incoming, call.failed_here, call.tag, call.piece);

  // Hop 2, along the column: to the destination's row. A failure seen in
  // hop 1 travels on as the mark, so every rank learns it.
  std::vector<std::vector<std::byte>> forward(column_members), arrived;
  if (!failed)
    for (const auto& buffer : incoming)
      for_each_record(buffer, [&](const Header& header, const std::byte* payload) {
        append_record(forward[static_cast<std::size_t>(header.destination / columns)], header, payload);
      });
  incoming.clear();
  failed = hop(*grid.column, forward, arrived, failed, call.tag, call.piece);
  call.failed_somewhere = failed;
  if (failed) return;

  // The inbox, in source order with the message to self in its place.
  struct Message {
    int source;
    const std::byte* payload;
    std::size_t bytes;
  };
  std::vector<Message> messages;
  for (const auto& buffer : arrived)
    for_each_record(buffer, [&](const Header& header, const std::byte* payload) {
      messages.push_back({header.source, payload, static_cast<std::size_t>(header.bytes)});
    });
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i)
    if (call.to_self(i)) messages.push_back({rank, call.payload(i), call.bytes(i)});
  std::sort(messages.begin(), messages.end(), [](const Message& a, const Message& b) { return a.source < b.source; });
  for (const Message& message : messages) {
    std::byte* target = append_message(call.into, message.source, message.bytes);
    if (message.bytes) std::memcpy(target, message.payload, message.bytes);
    if (message.source != rank) {
      ++call.stats.messages_received;
      call.stats.bytes_received += message.bytes;
    }
  }
}

}  // namespace domex::detail
