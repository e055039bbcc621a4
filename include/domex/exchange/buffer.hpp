// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Byte-level shapes shared by the typed Outbox/Inbox and the algorithms.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

namespace domex::detail {

/// What the exchange path did on this thread, cumulative: payload bytes domex
/// itself copied (messages to self, staging, reordering, the grid's
/// forwarding, a buffer's growth) and buffers it allocated (a ByteBuffer that
/// grew). Read the difference around a call (path_counts_for_testing()): it
/// makes a path's per-byte work observable without timing it. MPI's own
/// copies are not in it.
struct PathCounts {
  std::uint64_t bytes_copied = 0;
  std::uint64_t buffers_allocated = 0;
};
inline thread_local PathCounts path_counts;
/// This thread's counts so far (tests: difference around a call).
[[nodiscard]] inline PathCounts path_counts_for_testing() noexcept { return path_counts; }

/// memcpy of payload bytes, counted in path_counts.
inline void copy_bytes(void* to, const void* from, std::size_t bytes) noexcept {
  if (bytes == 0) return;
  std::memcpy(to, from, bytes);
  path_counts.bytes_copied += bytes;
}

/// Growable byte storage that, unlike std::vector<std::byte>, does not zero
/// what it is about to receive into. Aligned for any scalar type.
class ByteBuffer {
 public:
  [[nodiscard]] std::byte* data() noexcept { return storage_.get(); }
  [[nodiscard]] const std::byte* data() const noexcept { return storage_.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  /// New size; keeps the first min(old, new) bytes; new bytes are undefined.
  void resize(std::size_t size) {
    if (size > capacity_) {
      std::size_t capacity = capacity_ ? capacity_ : 64;
      while (capacity < size) capacity *= 2;
      auto bigger = std::make_unique_for_overwrite<std::byte[]>(capacity);
      ++path_counts.buffers_allocated;
      copy_bytes(bigger.get(), storage_.get(), size_);
      storage_ = std::move(bigger);
      capacity_ = capacity;
    }
    size_ = size;
  }
  void clear() noexcept { size_ = 0; }
  void swap(ByteBuffer& other) noexcept {
    storage_.swap(other.storage_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

 private:
  std::unique_ptr<std::byte[]> storage_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

/// Send side in CSR form: message i goes to ranks[i] and holds elements
/// [offsets[i], offsets[i+1]) of `data`, each `element_size` bytes.
struct SendView {
  std::span<const int> ranks;
  std::span<const std::size_t> offsets;
  const std::byte* data = nullptr;
  std::size_t element_size = 1;
  std::size_t element_count = 0;  ///< elements in `data`
};

/// Receive side in CSR form, sources ascending; offsets count elements.
struct RecvStore {
  std::vector<int> sources;
  std::vector<std::size_t> offsets{0};
  ByteBuffer data;
  ByteBuffer scratch;  ///< reused when messages arrive out of source order
  void clear() {
    sources.clear();
    offsets.assign(1, 0);
    data.clear();
  }
};

}  // namespace domex::detail
