// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// SMPI compatibility layer: force-included (-include) into every domex source
// when built with -DDOMEX_SMPI=ON (smpicxx), never in a normal build. It
// replaces the MPI calls SimGrid's SMPI (3.32) lacks or gets wrong, so that
// the library and the benchmarks run unmodified under smpirun:
//  - matched probes (MPI_Mprobe/Improbe/Mrecv/Imrecv: "Not yet implemented"):
//    the probe receives the message at once (MPI_Iprobe + MPI_Irecv into a
//    buffer of the probed size, so no later probe sees it again); Mrecv/Imrecv
//    copy it out when that receive completes;
//  - MPI_Ibarrier (a non-root rank completes once rank 0 has entered) and
//    MPI_Iallreduce with MAX/MIN/BAND/BOR/LAND/LOR (one message to every rank,
//    O(P)): a dissemination algorithm over MPI_Isend/Irecv, ceil(log2 P)
//    rounds, progressed by MPI_Test/Testall/Wait/Waitall on its request;
//  - MPI_Dims_create: balanced (SMPI gives 9x2x2 for 36);
//  - MPI_Comm_dup: as MPI_Comm_create with the communicator's own group, which
//    SMPI shares among the ranks (its dup gives every rank a copy of the
//    group, with a table as long as the world: 12 P^2 bytes a duplicate,
//    3.2 GB at 16384 ranks); the same communication otherwise;
//  - MPI_Dist_graph_create_adjacent / MPI_Neighbor_alltoallv: missing; they
//    print why and return MPI_ERR_UNSUPPORTED_OPERATION (domex throws);
//  - the C++ complex datatypes, which smpi.h declares misspelled;
//  - the `exit` macro of smpi_helpers.h, which breaks CLI11's App::exit;
//  - optionally (DOMEX_SIM_IDLE_POLL_NS), idle polls that back off: NBX's
//    loop and the blocking matched probe (domex_smpi_idle below);
//  - optionally (DOMEX_SIM_SEND_OVERHEAD_S / DOMEX_SIM_RECEIVE_OVERHEAD_S,
//    set by DOMEX_SIM_RENDEZVOUS=overheads), the per-message overheads that
//    SMPI charges only to eager messages, charged back under rendezvous: the
//    point-to-point calls below (send, receive, persistent start, the
//    completions) track the application's receives and persistent sends.

#include <mpi.h>

#ifdef __cplusplus
#include <complex>
#endif

// smpi_helpers.h (force-included by smpicxx) turns exit() into smpi_exit();
// CLI11 has a member function App::exit. Nothing in domex calls ::exit.
#undef exit

// smpi.h declares smpi_MPI_MPI_CXX_DOULE_COMPLEX (sic) but #defines
// MPI_CXX_DOUBLE_COMPLEX through smpi_MPI_CXX_DOUBLE_COMPLEX: the C types
// have the same layout (std::complex<T> is T[2]).
#undef MPI_CXX_FLOAT_COMPLEX
#undef MPI_CXX_DOUBLE_COMPLEX
#undef MPI_CXX_LONG_DOUBLE_COMPLEX
#define MPI_CXX_FLOAT_COMPLEX MPI_C_FLOAT_COMPLEX
#define MPI_CXX_DOUBLE_COMPLEX MPI_C_DOUBLE_COMPLEX
#define MPI_CXX_LONG_DOUBLE_COMPLEX MPI_C_LONG_DOUBLE_COMPLEX

#ifdef __cplusplus
extern "C" {
#endif
int domex_smpi_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message* message, MPI_Status* status);
int domex_smpi_Improbe(int source, int tag, MPI_Comm comm, int* flag, MPI_Message* message, MPI_Status* status);
int domex_smpi_Mrecv(void* buffer, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Status* status);
int domex_smpi_Imrecv(void* buffer, int count, MPI_Datatype datatype, MPI_Message* message, MPI_Request* request);
int domex_smpi_Ibarrier(MPI_Comm comm, MPI_Request* request);
int domex_smpi_Iallreduce(const void* send, void* receive, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          MPI_Request* request);
int domex_smpi_Test(MPI_Request* request, int* flag, MPI_Status* status);
int domex_smpi_Testall(int count, MPI_Request* requests, int* flag, MPI_Status* statuses);
int domex_smpi_Wait(MPI_Request* request, MPI_Status* status);
int domex_smpi_Waitall(int count, MPI_Request* requests, MPI_Status* statuses);
int domex_smpi_Request_free(MPI_Request* request);
int domex_smpi_Send(const void* buffer, int count, MPI_Datatype datatype, int destination, int tag, MPI_Comm comm);
int domex_smpi_Recv(void* buffer, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                    MPI_Status* status);
int domex_smpi_Sendrecv(const void* send, int send_count, MPI_Datatype send_type, int destination, int send_tag,
                        void* receive, int receive_count, MPI_Datatype receive_type, int source, int receive_tag,
                        MPI_Comm comm, MPI_Status* status);
int domex_smpi_Irecv(void* buffer, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                     MPI_Request* request);
int domex_smpi_Recv_init(void* buffer, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                         MPI_Request* request);
int domex_smpi_Send_init(const void* buffer, int count, MPI_Datatype datatype, int destination, int tag,
                         MPI_Comm comm, MPI_Request* request);
int domex_smpi_Start(MPI_Request* request);
int domex_smpi_Startall(int count, MPI_Request* requests);
int domex_smpi_Waitany(int count, MPI_Request* requests, int* index, MPI_Status* status);
int domex_smpi_Waitsome(int count, MPI_Request* requests, int* done, int* indices, MPI_Status* statuses);
int domex_smpi_Dims_create(int nodes, int dimensions, int* dims);
int domex_smpi_Comm_dup(MPI_Comm comm, MPI_Comm* duplicate);
int domex_smpi_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int* sources, const int* source_weights,
                                          int outdegree, const int* destinations, const int* destination_weights,
                                          MPI_Info info, int reorder, MPI_Comm* graph);
/// Where a polling loop found nothing to do: with DOMEX_SIM_IDLE_POLL_NS=N
/// (> 0) in the environment, sleeps 50 ns x 2^streak of simulated time, at
/// most N ns, then counts the streak up; else nothing (the default: every
/// poll costs smpi/iprobe, 50 ns). The caller sets *streak to 0 when it
/// makes progress. (A rank waiting 50 us polls 1000 times, each a context
/// switch of the simulator: most of the wall time of NBX at 4096 ranks.)
void domex_smpi_idle(unsigned* streak);
/// A message matched by a probe that was sent with MPI_Issend (NBX): SMPI
/// never sends it eagerly, so under DOMEX_SIM_RENDEZVOUS=overheads no receive
/// overhead is charged back for it.
void domex_smpi_synchronous_message(MPI_Message message);
/// The simulated rank running now (its SimGrid actor id): the key of per-rank
/// state where all ranks share one copy of the program (smpi/privatization:no).
long domex_smpi_rank_key(void);
int domex_smpi_Neighbor_alltoallv(const void* send, const int* send_counts, const int* send_displs,
                                  MPI_Datatype send_type, void* receive, const int* receive_counts,
                                  const int* receive_displs, MPI_Datatype receive_type, MPI_Comm comm);
#ifdef __cplusplus
}
#endif

// The replacements (smpi_compat.cpp itself calls SMPI's own).
#ifndef DOMEX_SMPI_COMPAT_IMPLEMENTATION
#define MPI_Mprobe domex_smpi_Mprobe
#define MPI_Improbe domex_smpi_Improbe
#define MPI_Mrecv domex_smpi_Mrecv
#define MPI_Imrecv domex_smpi_Imrecv
#define MPI_Ibarrier domex_smpi_Ibarrier
#define MPI_Iallreduce domex_smpi_Iallreduce
#define MPI_Test domex_smpi_Test
#define MPI_Testall domex_smpi_Testall
#define MPI_Wait domex_smpi_Wait
#define MPI_Waitall domex_smpi_Waitall
#define MPI_Request_free domex_smpi_Request_free
#define MPI_Send domex_smpi_Send
#define MPI_Recv domex_smpi_Recv
#define MPI_Sendrecv domex_smpi_Sendrecv
#define MPI_Irecv domex_smpi_Irecv
#define MPI_Recv_init domex_smpi_Recv_init
#define MPI_Send_init domex_smpi_Send_init
#define MPI_Start domex_smpi_Start
#define MPI_Startall domex_smpi_Startall
#define MPI_Waitany domex_smpi_Waitany
#define MPI_Waitsome domex_smpi_Waitsome
#define MPI_Dims_create domex_smpi_Dims_create
#define MPI_Comm_dup domex_smpi_Comm_dup
#define MPI_Dist_graph_create_adjacent domex_smpi_Dist_graph_create_adjacent
#define MPI_Neighbor_alltoallv domex_smpi_Neighbor_alltoallv
#endif
