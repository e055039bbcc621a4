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
#include <memory>

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
  // Buffers reused from call to call (capacity kept: a large message does not
  // pay for fresh pages every call).
  std::vector<std::vector<std::byte>> outgoing, forward;
  std::vector<ByteBuffer> row_storage, column_storage;
};

/// What one member received in a hop: a view of bytes owned by the hop's
/// storage (or, for the member itself, by the outgoing buffer).
struct Received {
  const std::byte* data = nullptr;
  std::size_t size = 0;
};

/// One hop: every member of `group` sends outgoing[m] to member m (its own
/// buffer is only viewed, not copied). Counts first (MPI_Alltoall of 64-bit
/// sizes, failed_mark from a rank that knows of a failure), then the data
/// point-to-point in pieces, received into uninitialised storage. Returns
/// whether any member reported a failure; then no data moves.
bool hop(const Comm& group, const std::vector<std::vector<std::byte>>& outgoing, std::vector<Received>& incoming,
         std::vector<ByteBuffer>& storage, bool failed, int tag, std::size_t piece) {
  const auto members = static_cast<std::size_t>(group.size());
  std::vector<std::uint64_t> send_counts(members), receive_counts(members);
  for (std::size_t m = 0; m < members; ++m) send_counts[m] = failed ? failed_mark : outgoing[m].size();
  check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_UINT64_T, receive_counts.data(), 1, MPI_UINT64_T, group.get()),
            "MPI_Alltoall");
  if (failed || std::find(receive_counts.begin(), receive_counts.end(), failed_mark) != receive_counts.end())
    return true;
  const auto me = static_cast<std::size_t>(group.rank());
  incoming.assign(members, {});
  storage.resize(members);
  std::vector<MPI_Request> requests;
  for (std::size_t m = 0; m < members; ++m) {
    const std::size_t bytes = receive_counts[m];
    if (m == me) {
      incoming[m] = {outgoing[m].data(), outgoing[m].size()};
      continue;
    }
    storage[m].resize(bytes);
    std::byte* target = storage[m].data();
    incoming[m] = {target, bytes};
    for (std::size_t p = 0, pieces = piece_count(bytes, piece); p < pieces; ++p) {
      const std::size_t begin = p * piece;
      MPI_Request request;
      check_mpi(MPI_Irecv(target + begin, static_cast<int>(std::min(piece, bytes - begin)), MPI_BYTE,
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

/// Appends a record (header, then payload) without initialising the bytes
/// first (the buffers are reserved to their final size beforehand).
void append_record(std::vector<std::byte>& buffer, const Header& header, const std::byte* payload) {
  const auto* head = reinterpret_cast<const std::byte*>(&header);
  buffer.insert(buffer.end(), head, head + sizeof(Header));
  if (header.bytes) buffer.insert(buffer.end(), payload, payload + header.bytes);
  path_counts.bytes_copied += header.bytes;
}

/// Calls `each(header, payload)` for every record in `buffer`.
template <class Each>
void for_each_record(const Received& buffer, Each&& each) {
  for (std::size_t at = 0; at < buffer.size;) {
    Header header;
    std::memcpy(&header, buffer.data + at, sizeof(Header));
    each(header, buffer.data + at + sizeof(Header));
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
  const int my_column = rank % columns;

  // Hop 1, along the row: to the member in the destination's column. Records
  // for this rank's own column skip the hop: they go straight into hop 2's
  // buffers. Buffers are reserved to their final size (no regrowth copies).
  const auto in_my_column = [&](int destination) { return destination % columns == my_column; };
  const auto column_slot = [&](int destination) { return static_cast<std::size_t>(destination / columns); };
  auto& outgoing = grid.outgoing;
  auto& forward = grid.forward;
  outgoing.resize(row_members);
  forward.resize(column_members);
  for (auto& buffer : outgoing) buffer.clear();
  for (auto& buffer : forward) buffer.clear();
  std::vector<std::size_t> row_bytes(row_members), column_bytes(column_members);
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    if (call.to_self(i)) continue;
    const int destination = call.send.ranks[i];
    (in_my_column(destination) ? column_bytes[column_slot(destination)]
                               : row_bytes[static_cast<std::size_t>(destination % columns)]) +=
        sizeof(Header) + call.bytes(i);
    ++call.stats.messages_sent;
    call.stats.bytes_sent += call.bytes(i);
  }
  for (std::size_t m = 0; m < row_members; ++m) outgoing[m].reserve(row_bytes[m]);
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    const int destination = call.send.ranks[i];
    if (!call.to_self(i) && !in_my_column(destination))
      append_record(outgoing[static_cast<std::size_t>(destination % columns)],
                    {rank, destination, static_cast<std::uint64_t>(call.bytes(i))}, call.payload(i));
  }
  std::vector<Received> incoming, arrived;
  bool failed = hop(*grid.row, outgoing, incoming, grid.row_storage, call.failed_here, call.tag, call.piece);

  // Hop 2, along the column: to the destination's row. A failure seen in
  // hop 1 travels on as the mark, so every rank learns it.
  if (!failed) {
    for (const Received& buffer : incoming)
      for_each_record(buffer, [&](const Header& header, const std::byte*) {
        column_bytes[column_slot(header.destination)] += sizeof(Header) + header.bytes;
      });
    for (std::size_t m = 0; m < column_members; ++m) forward[m].reserve(column_bytes[m]);
    for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
      const int destination = call.send.ranks[i];
      if (!call.to_self(i) && in_my_column(destination))
        append_record(forward[column_slot(destination)],
                      {rank, destination, static_cast<std::uint64_t>(call.bytes(i))}, call.payload(i));
    }
    for (const Received& buffer : incoming)
      for_each_record(buffer, [&](const Header& header, const std::byte* payload) {
        append_record(forward[column_slot(header.destination)], header, payload);
      });
  }
  failed = hop(*grid.column, forward, arrived, grid.column_storage, failed, call.tag, call.piece);
  call.failed_somewhere = failed;
  if (failed) return;

  // The inbox, in source order with the message to self in its place.
  struct Message {
    int source;
    const std::byte* payload;
    std::size_t bytes;
  };
  std::vector<Message> messages;
  for (const Received& buffer : arrived)
    for_each_record(buffer, [&](const Header& header, const std::byte* payload) {
      messages.push_back({header.source, payload, static_cast<std::size_t>(header.bytes)});
    });
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i)
    if (call.to_self(i)) messages.push_back({rank, call.payload(i), call.bytes(i)});
  std::sort(messages.begin(), messages.end(), [](const Message& a, const Message& b) { return a.source < b.source; });
  for (const Message& message : messages) {
    std::byte* target = append_message(call.into, message.source, message.bytes);
    copy_bytes(target, message.payload, message.bytes);
    if (message.source != rank) {
      ++call.stats.messages_received;
      call.stats.bytes_received += message.bytes;
    }
  }
}

}  // namespace domex::detail
