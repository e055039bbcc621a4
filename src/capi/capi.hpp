// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// What every src/capi/*.cpp shares: the handles behind the opaque C types and
// guarded(), which turns every exception into an error code and a message.

#include <domex/comm/collective.hpp>
#include <domex/comm/comm.hpp>
#include <domex/comm/error.hpp>
#include <domex/comm/profile.hpp>
#include <domex/decompose/multisection.hpp>
#include <domex/domex.h>
#include <domex/exchange/exchange.hpp>
#include <domex/halo/halo.hpp>
#include <domex/migrate/migrate.hpp>

#include <cstddef>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct domex_comm {
  domex::Comm comm;
};
struct domex_inbox {
  domex::detail::RecvStore store;
  domex::ExchangeStats stats;
};
struct domex_multisection {
  domex::Multisection multisection;
  const domex::Comm* comm;  ///< the one it was created on (must outlive it)
};
struct domex_migration {
  domex::MigrationPlan plan;
};
struct domex_buffer {
  std::vector<std::byte> bytes;
};
struct domex_halo {
  domex_halo(const domex::Comm& comm, std::array<std::size_t, 3> cells, domex::CartesianOptions grid_options,
             domex::HaloOptions halo_options)
      : grid(comm, cells, grid_options), plan(grid, halo_options) {}
  domex::CartesianGrid grid;
  domex::HaloPlan plan;  // refers to grid: declared after it
};
struct domex_profile {
  domex::Profile profile;
  std::vector<std::pair<std::string, double>> running;  ///< begun, not yet ended: name, start
};

namespace domex::capi {

/// A NULL handle or required pointer (DOMEX_ERR_NULL, this rank only).
class NullError : public Error {
 public:
  using Error::Error;
};
/// An invalid argument value found by the C layer (DOMEX_ERR_ARGUMENT).
class ArgumentError : public Error {
 public:
  using Error::Error;
};

/// "domex: rank R: <call>: <what>", as domex::fail writes it.
std::string message(std::string_view call, std::string_view what);
/// Records the message domex_last_error() returns on this thread.
void set_last_error(std::string text) noexcept;

/// `pointer`, or NullError naming the argument.
template <class T>
T& need(T* pointer, std::string_view call, std::string_view name) {
  if (pointer == nullptr) throw NullError(message(call, std::string(name) + " is NULL"));
  return *pointer;
}

/// A C string argument, or NullError naming it.
inline const char* need_text(const char* text, std::string_view call, std::string_view name) {
  need(text, call, name);
  return text;
}

/// Collective: every rank passes its own problem ("" if none); if any rank
/// has one, every rank throws ArgumentError naming the lowest such rank.
void agree_arguments(const Comm& comm, std::string_view call, const std::string& problem);

/// Parses an algorithm name (NULL or "" is automatic); on an unknown name
/// sets `problem` and returns automatic.
Algorithm parse_algorithm(const char* name, std::string& problem);

/// Positions x[i * stride] ... (stride in bytes) into `out`; "" or a problem.
std::string gather_positions(std::size_t count, const double* x, const double* y, const double* z,
                             std::size_t stride, std::vector<Point>& out);

/// Runs `work`, mapping any exception to an error code and message.
template <class Work>
int guarded(std::string_view call, Work&& work) noexcept {
  try {
    work();
    return DOMEX_SUCCESS;
  } catch (const NullError& error) {
    set_last_error(error.what());
    return DOMEX_ERR_NULL;
  } catch (const ArgumentError& error) {
    set_last_error(error.what());
    return DOMEX_ERR_ARGUMENT;
  } catch (const Error& error) {
    set_last_error(error.what());
    return DOMEX_ERR_LIBRARY;
  } catch (const std::bad_alloc&) {
    set_last_error(message(call, "out of memory"));
    return DOMEX_ERR_MEMORY;
  } catch (const std::exception& error) {
    set_last_error(message(call, error.what()));
    return DOMEX_ERR_INTERNAL;
  } catch (...) {
    set_last_error(message(call, "unknown exception"));
    return DOMEX_ERR_INTERNAL;
  }
}

/// Deletes *handle and sets it to NULL (NULL accepted).
template <class T>
int free_handle(T** handle, std::string_view call) noexcept {
  return guarded(call, [&] {
    if (handle == nullptr) return;
    delete *handle;
    *handle = nullptr;
  });
}

}  // namespace domex::capi
