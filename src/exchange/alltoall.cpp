// SPDX-License-Identifier: BSD-3-Clause
// alltoall: the baseline of the seed study. MPI_Alltoall of one 64-bit count
// per pair, then MPI_Alltoallv of the data. Every rank touches every other
// rank twice: O(P) per call whatever the pattern.
//
// MPI-3 counts and displacements are int. A pair whose message exceeds
// min(piece, INT_MAX / P) bytes travels point-to-point instead (both ends know
// its size from the counts), so the Alltoallv part never holds more than
// INT_MAX bytes per rank; displacements beyond INT_MAX are staged.

#include "detail.hpp"

#include <climits>
#include <cstdint>
#include <cstring>

namespace domex::detail {

namespace {

struct Scratch {
  std::vector<std::uint64_t> send_marks, receive_marks;
  std::vector<int> send_counts, send_displacements, receive_counts, receive_displacements;
  std::vector<std::size_t> receive_at;  // where each source's message goes in the store
  ByteBuffer send_stage, receive_stage;
};

}  // namespace

void run_alltoall(Call& call) {
  struct Site;
  auto& s = scratch<Scratch, Site>();
  const int rank = call.comm.rank();
  const auto size = static_cast<std::size_t>(call.comm.size());
  const std::size_t direct_limit = std::min(call.piece, static_cast<std::size_t>(INT_MAX) / size);

  // marks: 0 = no message, else bytes + 1 (empty messages are messages);
  // failed_mark from every rank of a failing one, to every rank.
  constexpr std::uint64_t failed_mark = UINT64_MAX;
  s.send_marks.assign(size, call.failed_here ? failed_mark : 0);
  s.receive_marks.assign(size, 0);
  std::size_t self_message = SIZE_MAX;
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    if (call.to_self(i)) self_message = i;
    else s.send_marks[static_cast<std::size_t>(call.send.ranks[i])] = call.bytes(i) + 1;
  }
  check_mpi(MPI_Alltoall(s.send_marks.data(), 1, MPI_UINT64_T, s.receive_marks.data(), 1, MPI_UINT64_T,
                         call.comm.get()),
            "MPI_Alltoall");
  call.failed_somewhere = call.failed_here;
  for (std::size_t source = 0; source < size; ++source)
    if (static_cast<int>(source) != rank && s.receive_marks[source] == failed_mark) call.failed_somewhere = true;
  if (call.failed_somewhere) return;  // every rank knows: nobody sends anything

  // Send side of the Alltoallv.
  s.send_counts.assign(size, 0);
  s.send_displacements.assign(size, 0);
  bool stage_send = false;
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    const std::size_t bytes = call.bytes(i);
    if (call.to_self(i) || bytes > direct_limit) continue;
    const auto d = static_cast<std::size_t>(call.send.ranks[i]);
    s.send_counts[d] = static_cast<int>(bytes);
    const std::size_t at = call.send.offsets[i] * call.send.element_size;
    if (at + bytes > static_cast<std::size_t>(INT_MAX)) stage_send = true;
    else s.send_displacements[d] = static_cast<int>(at);
  }
  const std::byte* send_base = call.send.data;
  if (stage_send) {  // rare: pack the direct messages contiguously
    std::size_t total = 0;
    for (std::size_t d = 0; d < size; ++d) total += static_cast<std::size_t>(s.send_counts[d]);
    s.send_stage.resize(total);
    std::size_t at = 0;
    for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
      const auto d = static_cast<std::size_t>(call.send.ranks[i]);
      if (call.to_self(i) || call.bytes(i) > direct_limit) continue;
      copy_bytes(s.send_stage.data() + at, call.payload(i), call.bytes(i));
      s.send_displacements[d] = static_cast<int>(at);
      at += call.bytes(i);
    }
    send_base = s.send_stage.data();
  }

  // Receive layout: sources ascending, so no reordering afterwards.
  s.receive_counts.assign(size, 0);
  s.receive_displacements.assign(size, 0);
  s.receive_at.assign(size, 0);
  std::size_t total = 0;
  bool stage_receive = false;
  for (std::size_t source = 0; source < size; ++source) {
    std::size_t bytes = 0;
    if (static_cast<int>(source) == rank) {
      if (self_message == SIZE_MAX) continue;
      bytes = call.bytes(self_message);
    } else {
      if (s.receive_marks[source] == 0) continue;
      bytes = s.receive_marks[source] - 1;
      if (bytes <= direct_limit) {
        s.receive_counts[source] = static_cast<int>(bytes);
        if (total + bytes > static_cast<std::size_t>(INT_MAX)) stage_receive = true;
        s.receive_displacements[source] = static_cast<int>(total);
      }
    }
    s.receive_at[source] = total;
    call.into.sources.push_back(static_cast<int>(source));
    total += bytes;
    call.into.offsets.push_back(total);
  }
  call.into.data.resize(total);
  std::byte* receive_base = call.into.data.data();
  if (stage_receive) {
    std::size_t staged = 0;
    for (std::size_t source = 0; source < size; ++source) {
      s.receive_displacements[source] = static_cast<int>(staged);
      staged += static_cast<std::size_t>(s.receive_counts[source]);
    }
    s.receive_stage.resize(staged);
    receive_base = s.receive_stage.data();
  }
  if (self_message != SIZE_MAX && call.bytes(self_message))
    copy_bytes(call.into.data.data() + s.receive_at[static_cast<std::size_t>(rank)], call.payload(self_message),
               call.bytes(self_message));

  // Messages too large for the Alltoallv go point-to-point, in pieces.
  auto& requests = request_scratch();
  for (std::size_t source = 0; source < size; ++source)
    if (static_cast<int>(source) != rank && s.receive_marks[source] > direct_limit + 1)
      post_receive(call, static_cast<int>(source), call.into.data.data() + s.receive_at[source],
                   s.receive_marks[source] - 1, requests);
  for (std::size_t i = 0; i < call.send.ranks.size(); ++i) {
    if (call.to_self(i) || call.bytes(i) <= direct_limit) continue;
    const std::size_t bytes = call.bytes(i);
    for (std::size_t piece = 0, pieces = piece_count(bytes, call.piece); piece < pieces; ++piece) {
      const std::size_t begin = piece * call.piece;
      MPI_Request request;
      check_mpi(MPI_Isend(call.payload(i) + begin, static_cast<int>(std::min(call.piece, bytes - begin)), MPI_BYTE,
                          call.send.ranks[i], call.tag, call.comm.get(), &request),
                "MPI_Isend");
      requests.push_back(request);
    }
  }

  check_mpi(MPI_Alltoallv(send_base, s.send_counts.data(), s.send_displacements.data(), MPI_BYTE, receive_base,
                          s.receive_counts.data(), s.receive_displacements.data(), MPI_BYTE, call.comm.get()),
            "MPI_Alltoallv");
  wait_all(requests, "MPI_Waitall");
  if (stage_receive)
    for (std::size_t source = 0; source < size; ++source)
      if (s.receive_counts[source])
        copy_bytes(call.into.data.data() + s.receive_at[source], receive_base + s.receive_displacements[source],
                   static_cast<std::size_t>(s.receive_counts[source]));

  for (std::size_t i = 0; i < call.send.ranks.size(); ++i)
    if (!call.to_self(i)) {
      ++call.stats.messages_sent;
      call.stats.bytes_sent += call.bytes(i);
    }
  for (std::size_t source = 0; source < size; ++source)
    if (static_cast<int>(source) != rank && s.receive_marks[source] && s.receive_marks[source] <= direct_limit + 1) {
      ++call.stats.messages_received;
      call.stats.bytes_received += s.receive_marks[source] - 1;
    }
}

}  // namespace domex::detail
