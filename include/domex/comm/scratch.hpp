// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// Reusable scratch storage of one call site, so that hot paths do not
// allocate once it has grown.

#ifdef DOMEX_SMPI
#include <unordered_map>
#endif

namespace domex::detail {

/// The scratch object of one call site (`Site`: a tag type declared at the
/// site) for this thread. Under SimGrid SMPI (`DOMEX_SMPI`, sim/) every
/// simulated rank runs on the same thread, and with `smpi/privatization:no`
/// in the same copy of the program, so there it is one per simulated rank
/// (a rank may yield inside MPI while another uses the same site).
template <class T, class Site>
T& scratch() {
#ifdef DOMEX_SMPI
  static std::unordered_map<long, T> per_rank;  // node-based: references stay valid
  return per_rank[domex_smpi_rank_key()];
#else
  thread_local T value;
  return value;
#endif
}

}  // namespace domex::detail
