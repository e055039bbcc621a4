// SPDX-License-Identifier: BSD-3-Clause
// Fuzzes the validation of a sparse exchange's send side: any CSR (ranks,
// offsets, data length) and any algorithm, on one rank. The exchange must
// either throw domex::Error and leave the inbox empty, or deliver exactly the
// message to self; never crash, hang or read out of bounds (ASan, UBSan).

#include <domex/exchange/exchange.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

namespace {

/// Reads bytes from the input, zeros past its end.
struct Reader {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;
  std::uint8_t byte() { return at < size ? data[at++] : 0; }
};

void require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  MPI_Init(argc, argv);
  std::atexit([] { MPI_Finalize(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static domex::Comm comm{MPI_COMM_WORLD};
  Reader in{data, size};
  const auto algorithm = domex::concrete_algorithms[in.byte() % domex::concrete_algorithms.size()];
  const std::size_t messages = in.byte() % 6;
  std::vector<int> ranks;
  for (std::size_t i = 0; i < messages; ++i) ranks.push_back(static_cast<int>(static_cast<std::int8_t>(in.byte())) % 4);
  const std::size_t offsets_count = messages + 1 - (in.byte() % 3 == 0 ? 1 : 0);  // sometimes one short
  std::vector<std::size_t> offsets;
  for (std::size_t i = 0; i < offsets_count; ++i) {
    const std::uint8_t b = in.byte();
    offsets.push_back(b == 255 ? static_cast<std::size_t>(-3) : b % 40);  // 255: a "negative" offset
  }
  const std::size_t elements = in.byte() % 48;
  std::vector<std::uint32_t> items(elements);
  for (std::size_t i = 0; i < elements; ++i) items[i] = static_cast<std::uint32_t>(i * 2654435761u);
  const std::size_t piece = in.byte() % 5 == 0 ? 8 : 0;  // sometimes tiny pieces

  domex::Outbox<std::uint32_t> outbox(ranks, offsets, items);
  domex::Inbox<std::uint32_t> inbox;
  bool threw = false;
  try {
    domex::exchange(comm, outbox, inbox, {.algorithm = algorithm, .max_message_bytes = piece});
  } catch (const domex::Error&) {
    threw = true;
  }
  if (threw) {
    require(inbox.message_count() == 0 && inbox.size() == 0 && inbox.offsets().size() == 1);
    return 0;
  }
  // Valid: one rank, so every message went to rank 0 = self, and it is there intact.
  require(inbox.message_count() == ranks.size());
  for (std::size_t m = 0; m < inbox.message_count(); ++m) {
    require(inbox.source(m) == 0);
    const auto got = inbox.message(m);
    require(got.size() == offsets[m + 1] - offsets[m]);
    for (std::size_t k = 0; k < got.size(); ++k) require(got[k] == items[offsets[m] + k]);
  }
  return 0;
}
