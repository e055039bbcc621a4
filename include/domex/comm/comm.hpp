// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::Comm: the communicator every domex call runs on.

#include <domex/comm/datatype.hpp>
#include <domex/comm/error.hpp>

#include <mpi.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace domex {

/// RAII owner of a duplicate of the user's communicator.
///
/// Why a duplicate: domex's messages can never match the application's, and
/// the error handler can be MPI_ERRORS_RETURN (every error becomes a
/// domex::Error) without changing the user's communicator.
/// Calls on a Comm are collective in the same order on every rank, so a
/// per-call counter, identical on all ranks, isolates consecutive calls: see
/// next_tag().
class Comm {
 public:
  /// Duplicates `user` (collective over `user`). Throws domex::Error if MPI is
  /// not initialised or the duplication fails.
  explicit Comm(MPI_Comm user);
  /// Takes ownership of `owned` (freed by the destructor) without duplicating
  /// it, e.g. a Cartesian communicator made from this one.
  static Comm adopt(MPI_Comm owned);

  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  ~Comm();

  [[nodiscard]] MPI_Comm get() const noexcept { return comm_; }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }

  /// A tag reserved for one collective domex call. Consecutive calls get
  /// different tags (cycling through tag_cycle values), so a rank that is one
  /// call ahead can never have its messages matched by a rank still in the
  /// previous call. Must be called the same number of times on every rank.
  [[nodiscard]] int next_tag() noexcept;
  /// Number of tags cycled through by next_tag().
  static constexpr int tag_cycle = 8192;

  /// Per-communicator state of a domex component (an RMA window, a cached
  /// decision), created on first use by `T{comm}` and destroyed, in reverse
  /// order of creation, before the communicator is freed. A cache, so
  /// available on a const Comm.
  template <class T>
  T& cached() const;

  // -- small typed collectives used throughout domex ----------------------
  void barrier() const;
  /// MPI_Allreduce of one arithmetic value.
  template <class T>
    requires has_builtin_datatype<T>
  [[nodiscard]] T allreduce(T value, MPI_Op op) const;
  /// MPI_Allreduce in place over an array of arithmetic values.
  template <class T>
    requires has_builtin_datatype<T>
  void allreduce_in_place(std::span<T> values, MPI_Op op) const;
  /// MPI_Allgather of one trivially copyable value per rank.
  template <Sendable T>
  [[nodiscard]] std::vector<T> allgather(const T& value) const;
  /// MPI_Allgatherv of a variable number of values per rank, concatenated in
  /// rank order. 64-bit totals; each rank's part must fit an int count.
  template <Sendable T>
  [[nodiscard]] std::vector<T> allgatherv(std::span<const T> values) const;

 private:
  struct CacheEntry {
    virtual ~CacheEntry() = default;
  };
  template <class T>
  struct CacheHolder final : CacheEntry {
    explicit CacheHolder(Comm& comm) : value(comm) {}
    T value;
  };
  template <class T>
  static const void* cache_key() noexcept {
    static const char key = 0;
    return &key;
  }
  struct Tagged {
    const void* key;
    std::unique_ptr<CacheEntry> entry;
  };

  Comm() = default;
  void init_from(MPI_Comm comm);
  void release() noexcept;
  void allgatherv_bytes(const void* data, std::size_t bytes, std::vector<std::byte>& out,
                        std::vector<std::size_t>& offsets) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  std::uint64_t calls_ = 0;
  mutable std::vector<Tagged> cache_;
};

// ---------------------------------------------------------------------------

template <class T>
T& Comm::cached() const {
  for (auto& tagged : cache_)
    if (tagged.key == cache_key<T>()) return static_cast<CacheHolder<T>&>(*tagged.entry).value;
  cache_.push_back({cache_key<T>(), std::make_unique<CacheHolder<T>>(const_cast<Comm&>(*this))});
  return static_cast<CacheHolder<T>&>(*cache_.back().entry).value;
}

template <class T>
  requires has_builtin_datatype<T>
T Comm::allreduce(T value, MPI_Op op) const {
  T result{};
  check_mpi(MPI_Allreduce(&value, &result, 1, builtin_datatype<T>(), op, comm_), "MPI_Allreduce");
  return result;
}

template <class T>
  requires has_builtin_datatype<T>
void Comm::allreduce_in_place(std::span<T> values, MPI_Op op) const {
  if (values.size() > static_cast<std::size_t>(INT32_MAX)) fail("Comm::allreduce_in_place", "more than INT_MAX values");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), builtin_datatype<T>(), op, comm_),
            "MPI_Allreduce");
}

template <Sendable T>
std::vector<T> Comm::allgather(const T& value) const {
  std::vector<T> result(static_cast<std::size_t>(size_));
  check_mpi(MPI_Allgather(&value, sizeof(T), MPI_BYTE, result.data(), sizeof(T), MPI_BYTE, comm_), "MPI_Allgather");
  return result;
}

template <Sendable T>
std::vector<T> Comm::allgatherv(std::span<const T> values) const {
  std::vector<std::byte> bytes;
  std::vector<std::size_t> offsets;
  allgatherv_bytes(values.data(), values.size_bytes(), bytes, offsets);
  std::vector<T> result(bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(result.data(), bytes.data(), bytes.size());
  return result;
}

}  // namespace domex
