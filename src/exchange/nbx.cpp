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

void run_nbx(Call& call) {
  auto& requests = request_scratch();
  copy_self(call);
  post_sends(call, /*synchronous=*/true, requests);
  thread_local std::vector<Envelope> envelopes;
  envelopes.clear();
  MPI_Request barrier = MPI_REQUEST_NULL;
  const int failed_here = call.failed_here ? 1 : 0;
  int failed_anywhere = 0;
  bool in_barrier = false;
  for (;;) {
    // Enter the barrier as soon as every send is matched, then drain what has
    // arrived: the barrier's rounds overlap the receives.
    if (!in_barrier) {
      int sent = 0;
      check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &sent, MPI_STATUSES_IGNORE),
                "MPI_Testall");
      if (sent) {
        requests.clear();
        check_mpi(MPI_Iallreduce(&failed_here, &failed_anywhere, 1, MPI_INT, MPI_MAX, call.comm.get(), &barrier),
                  "MPI_Iallreduce");
        in_barrier = true;
      }
    }
    for (int arrived = 1; arrived;) {
      MPI_Message message;
      MPI_Status status;
      check_mpi(MPI_Improbe(MPI_ANY_SOURCE, call.tag, call.comm.get(), &arrived, &message, &status), "MPI_Improbe");
      if (arrived) take_envelope(call, message, status, envelopes);
    }
    receive_envelopes(call, envelopes);
    if (in_barrier) {
      int done = 0;
      check_mpi(MPI_Test(&barrier, &done, MPI_STATUS_IGNORE), "MPI_Test(MPI_Iallreduce)");
      if (done) break;
    }
  }
  call.failed_somewhere = failed_anywhere != 0;
}

}  // namespace domex::detail
