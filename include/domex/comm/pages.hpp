// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// A message buffer on transparent huge pages where the kernel offers them.

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace domex::detail {

/// Bytes that persistent sends go out from. From 256 KiB on they are
/// aligned to 2 MiB and advised onto transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`, Linux; elsewhere plain memory): Open MPI's
/// single-copy path (CMA) looks the sender's pages up one at a time, and a
/// 500 KB message between two ranks of one node took 28-33 us from huge
/// pages against 60-65 us from 4 KiB ones (np 2, AMD EPYC Zen 3, Open MPI
/// 4.1.4; the receiver's pages made no difference).
class PageBuffer {
 public:
  PageBuffer() = default;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  PageBuffer(PageBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        size_(std::exchange(other.size_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  PageBuffer& operator=(PageBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    return *this;
  }
  ~PageBuffer() { std::free(data_); }

  /// Makes room for `size` bytes. The contents are not kept: a buffer that
  /// is large enough is reused as it is (no pages are touched again), a
  /// new one is zero-filled (its pages mapped now, not in the first send).
  void resize(std::size_t size) {
    if (size <= capacity_) {
      size_ = size;
      return;
    }
    std::free(std::exchange(data_, nullptr));
    size_ = capacity_ = 0;
    constexpr std::size_t huge = std::size_t{1} << 21, threshold = std::size_t{1} << 18;
    const bool large = size >= threshold;
    const std::size_t alignment = large ? huge : alignof(std::max_align_t);
    const std::size_t bytes = (size + alignment - 1) / alignment * alignment;
    data_ = static_cast<std::byte*>(std::aligned_alloc(alignment, bytes));
    if (data_ == nullptr) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (large) (void)madvise(data_, bytes, MADV_HUGEPAGE);  // advice: without it, 4 KiB pages
#endif
    std::memset(data_, 0, bytes);
    size_ = size;
    capacity_ = bytes;
  }
  std::byte* data() noexcept { return data_; }
  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  std::byte* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace domex::detail
