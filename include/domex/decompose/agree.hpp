#pragma once
// Agreement on validity before a collective call communicates: one rank's bad
// input becomes a domex::Error on every rank, never a hang.
//
// Generalises apps/mhd's collectively(): the check is rank-local, and global
// maxima the call needs anyway ride in the same reduction, so a valid call
// pays one MPI_Allreduce of a few doubles and nothing else. (It belongs in
// comm/; it lives here, beside its first users, until that layer takes it.)

#include <domex/comm/comm.hpp>

#include <functional>
#include <span>
#include <string_view>

namespace domex {

/// Collective over `comm`. Runs `check` on this rank (it validates local
/// input and may throw), then one MPI_Allreduce(MPI_MAX) of 1 + maxima.size()
/// doubles tells every rank whether some rank's check threw. If one did, every
/// rank throws domex::Error with the message of the lowest such rank (which
/// names that rank, the call and the value; one MPI_Bcast, only on failure).
/// `maxima` (finite values on entry when `check` succeeds) is reduced in the
/// same call: on return it holds the maximum over all ranks.
void agree(const Comm& comm, std::string_view call, const std::function<void()>& check,
           std::span<double> maxima = {});

}  // namespace domex
