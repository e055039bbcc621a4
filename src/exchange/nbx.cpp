// SPDX-License-Identifier: BSD-3-Clause
// NBX, the non-blocking consensus of Hoefler, Siebert and Lumsdaine, "Scalable
// communication protocols for dynamic sparse data exchange" (PPoPP 2010):
// synchronous sends (MPI_Issend) complete only once matched, so a rank whose
// sends have all completed enters an MPI_Ibarrier; while waiting it keeps
// receiving with MPI_Improbe. When the barrier completes every message has
// been received. O(log P) rounds, no O(P) vector anywhere. The barrier is an
// MPI_Iallreduce of one int (same rounds) so that a rank whose input was
// invalid can tell every rank without another collective.

#include "detail.hpp"

namespace domex::detail {

void nbx_start(Call& call, std::vector<MPI_Request>& sends) {
  post_sends(call, /*synchronous=*/true, sends);
}

void nbx_complete(Call& call, std::vector<MPI_Request>& sends, const MessageHandler* each) {
  struct Envelopes;
  auto& envelopes = scratch<std::vector<Envelope>, Envelopes>();
  envelopes.clear();
  RecvStore one;  // the callback form: one message at a time
  MPI_Request barrier = MPI_REQUEST_NULL;
  bool in_barrier = false;
  const int failed_here = call.failed_here ? 1 : 0;
  int failed_anywhere = 0;
#ifdef DOMEX_SMPI
  unsigned idle = 0;  // polls in a row that found nothing (sim/compat: domex_smpi_idle)
#endif
  for (;;) {
    bool progressed = false;
    // Enter the barrier as soon as every send is matched, then drain what has
    // arrived: the barrier's rounds overlap the receives.
    if (!in_barrier) {
      int sent = 0;
      check_mpi(MPI_Testall(static_cast<int>(sends.size()), sends.data(), &sent, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (sent) {
        sends.clear();
        check_mpi(MPI_Iallreduce(&failed_here, &failed_anywhere, 1, MPI_INT, MPI_MAX, call.comm.get(), &barrier),
                  "MPI_Iallreduce");
        in_barrier = true;
        progressed = true;
      }
    }
    for (int arrived = 1; arrived;) {
      MPI_Message message;
      MPI_Status status;
      check_mpi(MPI_Improbe(MPI_ANY_SOURCE, call.tag, call.comm.get(), &arrived, &message, &status), "MPI_Improbe");
      if (!arrived) break;
      progressed = true;
#ifdef DOMEX_SMPI
      domex_smpi_synchronous_message(message);  // sent with MPI_Issend (sim/compat/)
#endif
      if (each) {
        // Received and handed over at once: no staging of the whole inbox.
        one.clear();
        Call single{call.comm, call.send, one, call.stats, call.tag, call.piece, call.rma_window_bytes};
        receive_matched(single, message, status);
        (*each)(one.sources[0], std::span<const std::byte>(one.data.data(), one.data.size()));
      } else {
        take_envelope(call, message, status, envelopes);
      }
    }
    receive_envelopes(call, envelopes);
    if (in_barrier) {
      int done = 0;
      check_mpi(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test(MPI_Iallreduce)");
      if (done) break;
    }
#ifdef DOMEX_SMPI
    // Under SimGrid, an optional back-off of the polls (off by default).
    if (progressed)
      idle = 0;
    else
      domex_smpi_idle(&idle);
#else
    (void)progressed;
#endif
  }
  call.failed_somewhere = failed_anywhere != 0;
}

void run_nbx(Call& call) {
  auto& requests = request_scratch();
  copy_self(call);
  nbx_start(call, requests);
  nbx_complete(call, requests, nullptr);
}

}  // namespace domex::detail
