/* SPDX-License-Identifier: BSD-3-Clause */
/* domex C API: the library for C and, through the module `domex`
 * (src/fortran/domex.f90), for Fortran.
 *
 *   domex_comm* comm;
 *   domex_comm_create(MPI_COMM_WORLD, &comm);
 *   domex_inbox* inbox;
 *   domex_inbox_create(&inbox);
 *   if (domex_exchange(comm, sizeof(double), n, ranks, offsets, data, "nbx", inbox) != DOMEX_SUCCESS)
 *     fprintf(stderr, "%s\n", domex_last_error());
 *
 * Rules of every function:
 * - returns DOMEX_SUCCESS (0) or an error code; no C++ exception ever
 *   crosses this interface. domex_last_error() gives the message of the last
 *   failed call on this thread ("domex: rank R: <call>: <what>").
 * - a NULL handle or output pointer is reported on the calling rank alone
 *   (DOMEX_ERR_NULL), without communicating.
 * - collective functions (marked "Collective") agree on the validity of
 *   their arguments before they communicate: a bad value on one rank (an
 *   unknown algorithm name, bad dims, a NULL array with a non-zero count)
 *   returns the same error code on every rank, the message naming the rank
 *   that was wrong; none hangs. This costs one MPI_Allreduce of an int more
 *   than the C++ call, except in domex_halo_exchange and
 *   domex_halo_reverse_sum_doubles (free: see there).
 * - on error, outputs are untouched (a handle pointer stays as it was) or,
 *   for an inbox or buffer, left empty and reusable; handles stay usable.
 * Ranks are 0-based; counts and offsets are size_t. Handles are freed with
 * their *_free function, which takes the handle's address, sets it to NULL
 * and accepts NULL. */
#ifndef DOMEX_DOMEX_H
#define DOMEX_DOMEX_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Error codes. */
enum {
  DOMEX_SUCCESS = 0,
  DOMEX_ERR_NULL = 1,     /* a handle or required pointer was NULL (this rank only) */
  DOMEX_ERR_ARGUMENT = 2, /* an invalid argument value (on every rank of a collective call) */
  DOMEX_ERR_LIBRARY = 3,  /* a domex::Error from the library: invalid data, MPI failure, another rank's error */
  DOMEX_ERR_MEMORY = 4,   /* out of memory */
  DOMEX_ERR_INTERNAL = 5  /* any other failure */
};

/* Message of the last failed call on this thread ("" if none failed). The
 * pointer stays valid until the next failing call on this thread. */
const char* domex_last_error(void);

/* ---- communicator ------------------------------------------------------- */
typedef struct domex_comm domex_comm;

/* Collective over `comm`: a domex communicator on a duplicate of it (domex's
 * messages never match the application's). */
int domex_comm_create(MPI_Comm comm, domex_comm** out);
/* The same from a Fortran handle (MPI_Comm_f2c; mpi_f08's comm%MPI_VAL). */
int domex_comm_create_f(MPI_Fint comm, domex_comm** out);
/* Frees the duplicate (collective). Every object created on it must be freed first. */
int domex_comm_free(domex_comm** comm);
int domex_comm_rank(const domex_comm* comm, int* rank);
int domex_comm_size(const domex_comm* comm, int* size);

/* ---- sparse exchange ---------------------------------------------------- */
typedef struct domex_inbox domex_inbox;

int domex_inbox_create(domex_inbox** out);
int domex_inbox_free(domex_inbox** inbox);
/* Collective sparse exchange. This rank sends message i (i < message_count)
 * to ranks[i], holding elements [offsets[i], offsets[i+1]) of `data`, each
 * `element_size` bytes. Destinations must be distinct; a message may be
 * empty or go to this rank. `algorithm`: "automatic" (or NULL), "alltoall",
 * "sendrecv_reduce", "nbx", "reduce_scatter", "rma_fence", "rma_passive",
 * "grid"; the same on every rank. The inbox (reused: no allocation once it
 * has grown) receives one message per rank that sent to this one, sources
 * ascending; the result is the same for every algorithm. */
int domex_exchange(domex_comm* comm, size_t element_size, size_t message_count, const int* ranks,
                   const size_t* offsets, const void* data, const char* algorithm, domex_inbox* inbox);
/* Messages received (sources). */
int domex_inbox_count(const domex_inbox* inbox, size_t* count);
/* The sources, ascending (count of them), and the element offsets
 * (count + 1 of them) into the data. */
int domex_inbox_sources(const domex_inbox* inbox, const int** sources);
int domex_inbox_offsets(const domex_inbox* inbox, const size_t** offsets);
/* All received elements in one buffer (aligned for any type), and how many. */
int domex_inbox_data(const domex_inbox* inbox, const void** data, size_t* elements);
/* The algorithm that ran (automatic: the one it chose), e.g. "nbx". */
int domex_inbox_algorithm(const domex_inbox* inbox, const char** name);

/* ---- decomposition and migration ---------------------------------------- */
typedef struct domex_multisection domex_multisection;
typedef struct domex_migration domex_migration;
typedef struct domex_buffer domex_buffer;

/* Collective: a multisection decomposition (as in FDPS) of the box
 * [lo, hi) into divisions[0] x divisions[1] x divisions[2] domains (0 entries
 * chosen by domex; product = ranks), periodic[a] != 0 for periodic axes.
 * Particles moving less than neighbour_margin stay among the neighbours.
 * Starts with equal-volume domains. `comm` must outlive it. */
int domex_multisection_create(domex_comm* comm, const double lo[3], const double hi[3], const int divisions[3],
                              const int periodic[3], double neighbour_margin, domex_multisection** out);
int domex_multisection_free(domex_multisection** multisection);
/* Collective: new cuts at the weighted quantiles of this rank's `count`
 * particles. Positions are read as x[i * stride], y[i * stride],
 * z[i * stride] with `stride` in bytes: sizeof(double) for separate arrays,
 * the element size for an array of structs (x, y, z pointing into the first
 * element). `weights` (count of them) may be NULL: cost 1 each. */
int domex_multisection_rebalance(domex_multisection* multisection, size_t count, const double* x, const double* y,
                                 const double* z, size_t stride, const double* weights);
/* The rank owning `position`. */
int domex_multisection_owner(const domex_multisection* multisection, const double position[3], int* rank);
/* Box [lo, hi) of a rank's domain. */
int domex_multisection_box(const domex_multisection* multisection, int rank, double lo[3], double hi[3]);
int domex_multisection_divisions(const domex_multisection* multisection, int divisions[3]);

/* Collective: who goes where. Positions as in domex_multisection_rebalance;
 * `algorithm` (NULL: automatic) for the general path when some particle
 * left the neighbourhood. `comm` and `multisection` must outlive it. */
int domex_migration_create(domex_comm* comm, const domex_multisection* multisection, size_t count, const double* x,
                           const double* y, const double* z, size_t stride, const char* algorithm,
                           domex_migration** out);
int domex_migration_free(domex_migration** migration);
/* Particles that leave this rank. */
int domex_migration_leaving(const domex_migration* migration, size_t* count);
/* Collective: moves the particles, `count` records of `element_size` bytes
 * in `records` (count as at domex_migration_create), into `out`: the
 * particles that stay, in their order, then the arrivals by source. */
int domex_migrate(domex_migration* migration, size_t count, size_t element_size, const void* records,
                  domex_buffer* out);

/* Growable bytes (the result of domex_migrate). */
int domex_buffer_create(domex_buffer** out);
int domex_buffer_free(domex_buffer** buffer);
int domex_buffer_data(const domex_buffer* buffer, const void** data, size_t* bytes);

/* ---- Cartesian halo ----------------------------------------------------- */
typedef struct domex_halo domex_halo;

/* Collective: a grid of global_cells block-distributed over a Cartesian
 * grid of ranks (dims; 0 entries chosen by domex), periodic[a] != 0 for
 * periodic axes, with `depth` ghost layers on every side (deep halo) and
 * `neighbours` 26 (faces, edges, corners in one round) or 6 (faces, three
 * rounds forwarding edges and corners: the same ghost values). Every field
 * is an array of extent[0] x extent[1] x extent[2] elements, x fastest, with
 * extent = local_cells + 2 depth: a C array f[z][y][x] or the Fortran array
 * f(1-k:nx+k, 1-k:ny+k, 1-k:nz+k). */
int domex_halo_create(domex_comm* comm, const size_t global_cells[3], const int dims[3], const int periodic[3],
                      int depth, int neighbours, domex_halo** out);
int domex_halo_free(domex_halo** halo);
/* Cells this rank owns per axis, global index of its first one, the same
 * with ghosts (extent), and the number of elements of a field. */
int domex_halo_local_cells(const domex_halo* halo, size_t cells[3]);
int domex_halo_offset(const domex_halo* halo, size_t offset[3]);
int domex_halo_extent(const domex_halo* halo, size_t extent[3]);
int domex_halo_cells(const domex_halo* halo, size_t* cells);
/* Ranks per axis and this rank's coordinates (rank numbering as
 * MPI_Cart_create with reorder = 0 on the communicator: z fastest). */
int domex_halo_dims(const domex_halo* halo, int dims[3]);
int domex_halo_coords(const domex_halo* halo, int coords[3]);
/* Rank of the neighbour in `direction` (each -1, 0 or 1), -1 where a
 * non-periodic boundary has none. */
int domex_halo_neighbour(const domex_halo* halo, const int direction[3], int* rank);
/* Collective over the halo's neighbours: fills the ghosts of `field_count`
 * fields (fields[f] has domex_halo_cells() elements of element_sizes[f]
 * bytes), all in one message per neighbour. Ghosts beyond a non-periodic
 * boundary are untouched. A bad field on one rank (NULL, or a size of 0)
 * returns an error there and on every rank whose ghosts depend on it, without
 * an extra collective; their ghosts then hold their owners' values or are
 * unchanged. */
int domex_halo_exchange(domex_halo* halo, int field_count, void* const* fields, const size_t* element_sizes);
/* The same for `field_count` double fields. */
int domex_halo_exchange_doubles(domex_halo* halo, int field_count, double* const* fields);
/* Collective over the halo's neighbours: the reverse of
 * domex_halo_exchange_doubles. Every ghost cell's value is added into the
 * cell that owns it (a neighbour's, or this rank's own across a periodic
 * axis), all fields in one message per neighbour; ghosts beyond a
 * non-periodic boundary are ignored, and every ghost is unchanged afterwards.
 * Bitwise reproducible: an owned cell is summed in a fixed order, never in
 * arrival order (26 neighbours: its own value, then the ghosts of it in
 * ascending direction (dz, dy, dx) from it; 6 neighbours: rounds z, y, x,
 * edges and corners relayed; see domex::HaloPlan::reverse_sum). Errors as
 * domex_halo_exchange; an owned cell then holds its value plus the rounds
 * completed before the error (26 neighbours: unchanged). */
int domex_halo_reverse_sum_doubles(domex_halo* halo, int field_count, double* const* fields);

/* ---- profile ------------------------------------------------------------ */
typedef struct domex_profile domex_profile;

int domex_profile_create(domex_profile** out);
int domex_profile_free(domex_profile** profile);
/* Starts / stops timing a named phase (MPI_Wtime); phases may nest but one
 * name cannot be begun twice before it ends. */
int domex_profile_begin(domex_profile* profile, const char* phase);
int domex_profile_end(domex_profile* profile, const char* phase);
/* Adds `seconds` and one call to a phase. */
int domex_profile_add(domex_profile* profile, const char* phase, double seconds);
/* This rank's total for a phase (0 if never timed). */
int domex_profile_seconds(const domex_profile* profile, const char* phase, double* seconds);
/* Collective: min/avg/max over the ranks; rank 0 prints the table to stdout. */
int domex_profile_print(const domex_profile* profile, const domex_comm* comm, const char* title);
/* Collective: the reduced rows as JSON into `text` (at most `capacity` bytes,
 * NUL included; text may be NULL when capacity is 0). `length` gets the
 * length without the NUL: call again with a larger buffer if it is >= capacity. */
int domex_profile_json(const domex_profile* profile, const domex_comm* comm, char* text, size_t capacity,
                       size_t* length);

/* ---- bucket decomposition and ghost particles --------------------------- */
typedef struct domex_buckets domex_buckets;
typedef struct domex_ghost domex_ghost;

/* Collective: the box [lo, hi) cut into buckets[0] x buckets[1] x buckets[2]
 * uniform buckets (x fastest), contiguous runs of them along a Morton curve
 * per rank; periodic[a] != 0 for periodic axes (periodic may be NULL).
 * Starts with equal bucket counts per rank. `comm` must outlive it. */
int domex_buckets_create(domex_comm* comm, const double lo[3], const double hi[3], const int buckets[3],
                         const int periodic[3], domex_buckets** out);
int domex_buckets_free(domex_buckets** buckets);
/* Collective: runs of equal cost (1 per particle, or `weights`, may be NULL)
 * for this rank's `count` particles; positions as in
 * domex_multisection_rebalance. */
int domex_buckets_rebalance(domex_buckets* buckets, size_t count, const double* x, const double* y, const double* z,
                            size_t stride, const double* weights);
/* The rank owning `position` (an error for NaN or outside a non-periodic axis). */
int domex_buckets_owner(const domex_buckets* buckets, const double position[3], int* rank);

/* Collective: a ghost plan. Every rank gets a copy of every particle of every
 * rank (itself included, through periodic images) whose position, or a
 * periodic image of it, lies within `cutoff` of its domain (give the
 * interaction cutoff plus the Verlet skin; finite, > 0, equal on every rank,
 * at most half of every periodic length). This rank's `count` owned
 * particles are at x[i * stride], y[i * stride], z[i * stride] (stride in
 * bytes, as in domex_multisection_rebalance). Every field of the plan has
 * domex_ghost_size() entries: the owned particles in this order, then the
 * ghosts (by source rank ascending, then the source's order, whatever the
 * algorithm). `comm` and the decomposition must outlive
 * the plan; domex_ghost_rebuild uses the decomposition's current domains. */
int domex_ghost_create_multisection(domex_comm* comm, const domex_multisection* decomposition, size_t count,
                                    const double* x, const double* y, const double* z, size_t stride, double cutoff,
                                    domex_ghost** out);
int domex_ghost_create_buckets(domex_comm* comm, const domex_buckets* decomposition, size_t count, const double* x,
                               const double* y, const double* z, size_t stride, double cutoff, domex_ghost** out);
int domex_ghost_free(domex_ghost** ghost);
/* Collective: the plan again for new owned positions (after a migration, or
 * when particles moved more than half the skin), reusing its buffers. On
 * error the previous plan stays. */
int domex_ghost_rebuild(domex_ghost* ghost, size_t count, const double* x, const double* y, const double* z,
                        size_t stride);
/* Owned particles, ghosts, and entries of every field (their sum). */
int domex_ghost_local_count(const domex_ghost* ghost, size_t* count);
int domex_ghost_count(const domex_ghost* ghost, size_t* count);
int domex_ghost_size(const domex_ghost* ghost, size_t* entries);
/* Ghost positions at the build, periodic shift applied: x, y, z of ghost g
 * (field entry local_count + g) at positions[3 g + 0..2]; NULL when there
 * are none. Valid until the next rebuild or free. */
int domex_ghost_positions(const domex_ghost* ghost, const double** positions);
/* Ranks the ghosts come from (ascending; this rank where it has periodic
 * images of its own particles) and their ghost offsets (count + 1): the ghosts
 * of sources[s] are [offsets[s], offsets[s + 1]). Valid until rebuild or free. */
int domex_ghost_sources(const domex_ghost* ghost, size_t* count, const int** sources, const size_t** offsets);
/* Collective: copies the owned entries of `field_count` fields into the ghost
 * entries of the ranks that hold them as ghosts, all fields in one message
 * per rank. fields[f] has domex_ghost_size() elements of element_sizes[f]
 * bytes. position_offsets (may be NULL: none) gives per field the byte
 * offset inside an element of a position (3 doubles) to which the periodic
 * shift is added on the way, or -1: {0} for an interleaved x, y, z array,
 * offsetof(particle, position) for an array of structs. A bad field on one
 * rank (NULL with entries, element size 0, an offset leaving no 3 doubles)
 * is DOMEX_ERR_ARGUMENT on every rank (one MPI_Allreduce of an int, which
 * the C++ call, with its default local checks, does not make); no ghost is
 * changed then. */
int domex_ghost_update(domex_ghost* ghost, int field_count, void* const* fields, const size_t* element_sizes,
                       const ptrdiff_t* position_offsets);
/* The same for `field_count` double fields (no shift). */
int domex_ghost_update_doubles(domex_ghost* ghost, int field_count, double* const* fields);
/* The same for positions in three arrays of domex_ghost_size() entries,
 * read and written at x[i * stride], ... (separate arrays or the members of
 * an array of structs): the ghost entries get the owners' positions plus the
 * periodic shift. One message per rank of its own. Between rebuilds, do not
 * wrap owned positions back into a periodic box: the image shifts are those
 * of the positions the plan was built with (wrap just before a rebuild). */
int domex_ghost_update_positions(domex_ghost* ghost, double* x, double* y, double* z, size_t stride);
/* Collective: adds the ghost entries of `field_count` double fields into
 * their owners' entries (half neighbour lists, Newton's third law; the
 * density summed once per pair), in a fixed order (source rank, then ghost
 * order), never in arrival order: the same bits at every run. Ghost entries
 * are left as they were. Errors as domex_ghost_update. */
int domex_ghost_reverse_sum_doubles(domex_ghost* ghost, int field_count, double* const* fields);

#ifdef __cplusplus
}
#endif

#endif /* DOMEX_DOMEX_H */
