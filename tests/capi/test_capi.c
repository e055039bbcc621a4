/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of the C API (include/domex/domex.h), written in C: the bytes
 * received by every algorithm, ghost values of deep halos with 6 and 26
 * neighbours, conserved particles after migration, profile timers, and every
 * error path (a code and a message on every rank concerned, nothing half
 * done, the handles usable afterwards). Expected values are computed here
 * from the same rules the C++ API follows (tests/exchange, tests/halo).
 * The exit code is the maximum over the ranks. */
#include <domex/domex.h>

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank_ = 0, size_ = 1, failures = 0;

#define CHECK(condition)                                                                      \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      ++failures;                                                                             \
      fprintf(stderr, "[rank %d] %s:%d: CHECK(%s) failed; last error: %s\n", rank_, __FILE__, \
              __LINE__, #condition, domex_last_error());                                      \
    }                                                                                         \
  } while (0)

/* A call expected to succeed. */
#define OK(call) CHECK((call) == DOMEX_SUCCESS)

/* ---- sparse exchange ---------------------------------------------------- */

/* 12-byte elements: not a power of two, no padding. */
typedef struct {
  int32_t source, destination, index;
} Item;

/* Pattern: rank s sends to (s + 1) % P, (s + 3) % P and itself (distinct
 * destinations, ascending order not required), message s -> d of
 * (7 s + 3 d) % 5 items (empty messages included). */
static int destinations_of(int s, int* out) {
  int candidates[3], n = 0, i, j;
  candidates[0] = (s + 1) % size_;
  candidates[1] = (s + 3) % size_;
  candidates[2] = s;
  for (i = 0; i < 3; ++i) {
    int seen = 0;
    for (j = 0; j < n; ++j) seen |= out[j] == candidates[i];
    if (!seen) out[n++] = candidates[i];
  }
  return n;
}
static size_t items_of(int s, int d) { return (size_t)((7 * s + 3 * d) % 5); }

static void test_exchange(domex_comm* comm, const char* algorithm) {
  int ranks[3], n = destinations_of(rank_, ranks), m, s, i;
  size_t offsets[4] = {0}, total = 0, k;
  Item items[16];
  domex_inbox* inbox = NULL;
  const int* sources = NULL;
  const size_t* received_offsets = NULL;
  const void* data = NULL;
  size_t count = 99, elements = 99, expected_count = 0, at = 0;
  const char* ran = NULL;
  for (m = 0; m < n; ++m) {
    for (k = 0; k < items_of(rank_, ranks[m]); ++k) {
      items[total].source = rank_;
      items[total].destination = ranks[m];
      items[total].index = (int32_t)k;
      ++total;
    }
    offsets[m + 1] = total;
  }
  OK(domex_inbox_create(&inbox));
  OK(domex_exchange(comm, sizeof(Item), (size_t)n, ranks, offsets, items, algorithm, inbox));
  OK(domex_inbox_count(inbox, &count));
  OK(domex_inbox_sources(inbox, &sources));
  OK(domex_inbox_offsets(inbox, &received_offsets));
  OK(domex_inbox_data(inbox, &data, &elements));
  OK(domex_inbox_algorithm(inbox, &ran));
  if (strcmp(algorithm, "automatic") != 0) CHECK(ran && strcmp(ran, algorithm) == 0);
  /* Expected: every sender s whose destinations include this rank, ascending. */
  for (s = 0; s < size_; ++s) {
    int d[3], dn = destinations_of(s, d), sends = 0;
    for (i = 0; i < dn; ++i) sends |= d[i] == rank_;
    if (!sends) continue;
    CHECK(expected_count < count);
    if (expected_count >= count) break;
    CHECK(sources[expected_count] == s);
    CHECK(received_offsets[expected_count] == at);
    CHECK(received_offsets[expected_count + 1] - received_offsets[expected_count] == items_of(s, rank_));
    for (k = 0; k < items_of(s, rank_) && at + k < elements; ++k) {
      const Item* item = (const Item*)data + at + k;
      CHECK(item->source == s && item->destination == rank_ && item->index == (int32_t)k);
    }
    at += items_of(s, rank_);
    ++expected_count;
  }
  CHECK(count == expected_count);
  CHECK(elements == at);
  OK(domex_inbox_free(&inbox));
  CHECK(inbox == NULL);
}

static void test_exchange_errors(domex_comm* comm) {
  domex_inbox* inbox = NULL;
  size_t count = 99, one[2] = {0, 1};
  int self = rank_, code;
  double value = 1.0;
  const char* text;
  OK(domex_inbox_create(&inbox));
  /* A first valid exchange fills the inbox; the failing ones must empty it. */
  OK(domex_exchange(comm, sizeof(double), 1, &self, one, &value, "nbx", inbox));
  OK(domex_inbox_count(inbox, &count));
  CHECK(count == 1);

  /* Unknown algorithm on rank 0 only: the same code on every rank, naming rank 0. */
  code = domex_exchange(comm, sizeof(double), 1, &self, one, &value, rank_ == 0 ? "bogus" : "nbx", inbox);
  CHECK(code == DOMEX_ERR_ARGUMENT);
  text = domex_last_error();
  CHECK(strstr(text, "rank 0") != NULL && strstr(text, "bogus") != NULL && strstr(text, "nbx") != NULL);
  OK(domex_inbox_count(inbox, &count));
  CHECK(count == 0);

  /* NULL ranks with one message on the last rank. */
  code = domex_exchange(comm, sizeof(double), 1, rank_ == size_ - 1 ? NULL : &self, one, &value, "alltoall", inbox);
  CHECK(code == DOMEX_ERR_ARGUMENT);
  CHECK(strstr(domex_last_error(), "ranks is NULL") != NULL);

  /* A destination out of range on rank 0: the library's own check, on every rank. */
  {
    int bad = rank_ == 0 ? size_ : self;
    code = domex_exchange(comm, sizeof(double), 1, &bad, one, &value, "sendrecv_reduce", inbox);
    CHECK(code == DOMEX_ERR_LIBRARY);
    CHECK(strstr(domex_last_error(), "out of range") != NULL);
    OK(domex_inbox_count(inbox, &count));
    CHECK(count == 0);
  }

  /* NULL handles: this rank only, no communication. */
  CHECK(domex_exchange(NULL, 8, 0, NULL, NULL, NULL, NULL, inbox) == DOMEX_ERR_NULL);
  CHECK(strstr(domex_last_error(), "comm is NULL") != NULL);
  CHECK(domex_exchange(comm, 8, 0, NULL, NULL, NULL, NULL, NULL) == DOMEX_ERR_NULL);
  CHECK(domex_inbox_count(NULL, &count) == DOMEX_ERR_NULL);
  CHECK(domex_inbox_count(inbox, NULL) == DOMEX_ERR_NULL);

  /* Still usable: an empty exchange (no messages, NULL arrays), then a real one. */
  OK(domex_exchange(comm, 8, 0, NULL, NULL, NULL, NULL, inbox));
  OK(domex_inbox_count(inbox, &count));
  CHECK(count == 0);
  OK(domex_exchange(comm, sizeof(double), 1, &self, one, &value, "rma_passive", inbox));
  OK(domex_inbox_count(inbox, &count));
  CHECK(count == 1);
  OK(domex_inbox_free(&inbox));
  OK(domex_inbox_free(&inbox)); /* NULL accepted */
}

/* ---- halo --------------------------------------------------------------- */

static double value_at(long x, long y, long z, int field) { return (double)(x + 100 * y + 10000 * z) + 0.25 * field; }

static long wrap(long i, long n) { return ((i % n) + n) % n; }

/* Exchanges two double fields and one int field; checks every cell. */
static void test_halo(domex_comm* comm, int neighbours, int depth) {
  const size_t global[3] = {13, 10, 9};
  const int dims[3] = {0, 0, 0}, periodic[3] = {1, 0, 1};
  domex_halo* halo = NULL;
  size_t local[3], offset[3], extent[3], cells, c;
  double *a, *b;
  int32_t* ids;
  long i, j, k;
  int wrong = 0;
  OK(domex_halo_create(comm, global, dims, periodic, depth, neighbours, &halo));
  if (!halo) return;
  OK(domex_halo_local_cells(halo, local));
  OK(domex_halo_offset(halo, offset));
  OK(domex_halo_extent(halo, extent));
  OK(domex_halo_cells(halo, &cells));
  CHECK(cells == extent[0] * extent[1] * extent[2]);
  CHECK(extent[0] == local[0] + 2 * (size_t)depth);
  a = malloc(cells * sizeof *a);
  b = malloc(cells * sizeof *b);
  ids = malloc(cells * sizeof *ids);
  for (c = 0; c < cells; ++c) {
    a[c] = b[c] = -1.0;
    ids[c] = -1;
  }
  for (k = 0; k < (long)local[2]; ++k)
    for (j = 0; j < (long)local[1]; ++j)
      for (i = 0; i < (long)local[0]; ++i) {
        const size_t at = (size_t)(i + depth) + extent[0] * ((size_t)(j + depth) + extent[1] * (size_t)(k + depth));
        const long x = (long)offset[0] + i, y = (long)offset[1] + j, z = (long)offset[2] + k;
        a[at] = value_at(x, y, z, 0);
        b[at] = value_at(x, y, z, 1);
        ids[at] = (int32_t)(x + 100 * y + 10000 * z);
      }
  {
    void* fields[3];
    size_t sizes[3] = {sizeof(double), sizeof(double), sizeof(int32_t)};
    fields[0] = a;
    fields[1] = b;
    fields[2] = ids;
    OK(domex_halo_exchange(halo, 3, fields, sizes));
  }
  for (k = -depth; k < (long)local[2] + depth; ++k)
    for (j = -depth; j < (long)local[1] + depth; ++j)
      for (i = -depth; i < (long)local[0] + depth; ++i) {
        const size_t at = (size_t)(i + depth) + extent[0] * ((size_t)(j + depth) + extent[1] * (size_t)(k + depth));
        const long x = (long)offset[0] + i, y = (long)offset[1] + j, z = (long)offset[2] + k;
        /* y is not periodic: ghosts beyond its ends stay untouched. */
        if (y < 0 || y >= (long)global[1]) {
          wrong |= a[at] != -1.0 || b[at] != -1.0 || ids[at] != -1;
        } else {
          const long wx = wrap(x, (long)global[0]), wz = wrap(z, (long)global[2]);
          wrong |= a[at] != value_at(wx, y, wz, 0) || b[at] != value_at(wx, y, wz, 1) ||
                   ids[at] != (int32_t)(wx + 100 * y + 10000 * wz);
        }
      }
  CHECK(!wrong);
  /* The doubles-only entry point gives the same ghosts. */
  {
    double* fields[2];
    fields[0] = a;
    fields[1] = b;
    for (c = 0; c < cells; ++c) a[c] = a[c] + 0.0;
    OK(domex_halo_exchange_doubles(halo, 2, fields));
  }
  free(a);
  free(b);
  free(ids);
  OK(domex_halo_free(&halo));
  CHECK(halo == NULL);
}

/* Reverse sum of two double fields. Every cell with an owner starts as its
 * global cell's value, ghosts included (beyond the non-periodic y boundary:
 * -1). Afterwards an owned cell is that value times the number of copies of
 * it on all ranks: per axis itself, plus the neighbour below when the cell is
 * within depth of the lower side and that neighbour exists, the same above
 * (the sums are exact). Ghosts are unchanged. */
static void test_halo_reverse(domex_comm* comm, int neighbours, int depth) {
  const size_t global[3] = {13, 10, 9};
  const int dims[3] = {0, 0, 0}, periodic[3] = {1, 0, 1};
  domex_halo* halo = NULL;
  size_t local[3], offset[3], extent[3], cells, c;
  double *a, *b, *a0, *b0;
  long i, j, k;
  int wrong = 0, below[3], above[3], axis;
  OK(domex_halo_create(comm, global, dims, periodic, depth, neighbours, &halo));
  if (!halo) return;
  OK(domex_halo_local_cells(halo, local));
  OK(domex_halo_offset(halo, offset));
  OK(domex_halo_extent(halo, extent));
  OK(domex_halo_cells(halo, &cells));
  for (axis = 0; axis < 3; ++axis) {
    int direction[3] = {0, 0, 0};
    direction[axis] = -1;
    OK(domex_halo_neighbour(halo, direction, &below[axis]));
    direction[axis] = 1;
    OK(domex_halo_neighbour(halo, direction, &above[axis]));
  }
  a = malloc(cells * sizeof *a);
  b = malloc(cells * sizeof *b);
  a0 = malloc(cells * sizeof *a0);
  b0 = malloc(cells * sizeof *b0);
  for (k = -depth; k < (long)local[2] + depth; ++k)
    for (j = -depth; j < (long)local[1] + depth; ++j)
      for (i = -depth; i < (long)local[0] + depth; ++i) {
        const size_t at = (size_t)(i + depth) + extent[0] * ((size_t)(j + depth) + extent[1] * (size_t)(k + depth));
        const long x = (long)offset[0] + i, y = (long)offset[1] + j, z = (long)offset[2] + k;
        const long wx = wrap(x, (long)global[0]), wz = wrap(z, (long)global[2]);
        const int owned = y >= 0 && y < (long)global[1];
        a0[at] = a[at] = owned ? value_at(wx, y, wz, 0) : -1.0;
        b0[at] = b[at] = owned ? value_at(wx, y, wz, 1) : -1.0;
      }
  {
    double* fields[2];
    fields[0] = a;
    fields[1] = b;
    OK(domex_halo_reverse_sum_doubles(halo, 2, fields));
  }
  for (k = -depth; k < (long)local[2] + depth; ++k)
    for (j = -depth; j < (long)local[1] + depth; ++j)
      for (i = -depth; i < (long)local[0] + depth; ++i) {
        const size_t at = (size_t)(i + depth) + extent[0] * ((size_t)(j + depth) + extent[1] * (size_t)(k + depth));
        const long cell[3] = {i, j, k};
        double copies = 1.0;
        int ghost = 0;
        for (axis = 0; axis < 3; ++axis) {
          ghost |= cell[axis] < 0 || cell[axis] >= (long)local[axis];
          copies *= 1 + (cell[axis] < depth && below[axis] >= 0) +
                    (cell[axis] >= (long)local[axis] - depth && above[axis] >= 0);
        }
        if (ghost) wrong |= a[at] != a0[at] || b[at] != b0[at];
        else wrong |= a[at] != copies * a0[at] || b[at] != copies * b0[at];
      }
  CHECK(!wrong);
  /* A NULL field on the last rank: an error there and on its neighbours; then
   * the plan still works. */
  {
    double* fields[2];
    int code;
    fields[0] = a;
    fields[1] = rank_ == size_ - 1 ? NULL : b;
    code = domex_halo_reverse_sum_doubles(halo, 2, fields);
    if (rank_ == size_ - 1)
      CHECK(code == DOMEX_ERR_ARGUMENT && strstr(domex_last_error(), "field 1 is NULL") != NULL);
    else
      CHECK(code == DOMEX_SUCCESS || (code == DOMEX_ERR_LIBRARY && strstr(domex_last_error(), "invalid") != NULL));
    code = domex_halo_reverse_sum_doubles(halo, 0, fields); /* on every rank */
    CHECK(code == DOMEX_ERR_ARGUMENT && strstr(domex_last_error(), "field_count 0") != NULL);
    /* Conservation: 1 in every cell with an owner, summed over the owned cells
     * afterwards, is the number of such cells on all ranks, ghosts included. */
    {
      double counts[2] = {0.0, 0.0};
      for (c = 0; c < cells; ++c) a[c] = b[c] = 1.0;
      fields[1] = b;
      OK(domex_halo_reverse_sum_doubles(halo, 2, fields));
      for (k = -depth; k < (long)local[2] + depth; ++k)
        for (j = -depth; j < (long)local[1] + depth; ++j)
          for (i = -depth; i < (long)local[0] + depth; ++i) {
            const size_t at = (size_t)(i + depth) + extent[0] * ((size_t)(j + depth) + extent[1] * (size_t)(k + depth));
            const long y = (long)offset[1] + j;
            const int owned =
                i >= 0 && i < (long)local[0] && j >= 0 && j < (long)local[1] && k >= 0 && k < (long)local[2];
            counts[0] += y >= 0 && y < (long)global[1] ? 1.0 : 0.0;
            counts[1] += owned ? a[at] : 0.0;
          }
      MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      CHECK(counts[0] == counts[1]);
    }
  }
  free(a);
  free(b);
  free(a0);
  free(b0);
  OK(domex_halo_free(&halo));
}

static void test_halo_errors(domex_comm* comm) {
  const size_t global[3] = {8, 8, 8};
  const int periodic[3] = {1, 1, 1};
  domex_halo* halo = NULL;
  size_t cells, c;
  double* field;
  int code, direction[3] = {1, 0, 0}, neighbour = -2;

  /* dims that do not multiply to P: an error on every rank, no handle. */
  {
    const int dims[3] = {size_ + 1, 1, 1};
    code = domex_halo_create(comm, global, dims, periodic, 1, 26, &halo);
    CHECK(code != DOMEX_SUCCESS);
    CHECK(halo == NULL);
    CHECK(strlen(domex_last_error()) > 0);
  }
  {
    const int dims[3] = {-1, 0, 0};
    code = domex_halo_create(comm, global, dims, periodic, 1, 26, &halo);
    CHECK(code == DOMEX_ERR_ARGUMENT && halo == NULL && strstr(domex_last_error(), "negative") != NULL);
  }
  /* depth 0 on the last rank, 7 neighbours on rank 0. */
  code = domex_halo_create(comm, global, NULL, periodic, rank_ == size_ - 1 ? 0 : 1, 26, &halo);
  CHECK(code == DOMEX_ERR_ARGUMENT && halo == NULL && strstr(domex_last_error(), "depth 0") != NULL);
  code = domex_halo_create(comm, global, NULL, periodic, 1, rank_ == 0 ? 7 : 6, &halo);
  CHECK(code == DOMEX_ERR_ARGUMENT && halo == NULL && strstr(domex_last_error(), "neither 6 nor 26") != NULL);
  CHECK(domex_halo_create(comm, NULL, NULL, periodic, 1, 26, &halo) == DOMEX_ERR_NULL);

  /* A NULL field on rank 0: an error there and on the ranks that depend on it;
   * then the plan still exchanges correctly. */
  OK(domex_halo_create(comm, global, NULL, periodic, 1, 26, &halo));
  if (!halo) return;
  OK(domex_halo_cells(halo, &cells));
  field = malloc(cells * sizeof *field);
  for (c = 0; c < cells; ++c) field[c] = (double)rank_;
  {
    double* fields[1];
    fields[0] = rank_ == 0 ? NULL : field;
    code = domex_halo_exchange_doubles(halo, 1, fields);
    if (rank_ == 0) CHECK(code == DOMEX_ERR_ARGUMENT && strstr(domex_last_error(), "field 0 is NULL") != NULL);
    /* Every rank is a neighbour of rank 0 here (periodic, 26 neighbours, P <= 4)... */
    if (rank_ != 0 && size_ <= 4) CHECK(code == DOMEX_ERR_LIBRARY && strstr(domex_last_error(), "rank 0") != NULL);
    fields[0] = field;
    OK(domex_halo_exchange_doubles(halo, 1, fields));
    /* ...so the ghosts are the neighbours' ranks now. */
    OK(domex_halo_neighbour(halo, direction, &neighbour));
    {
      size_t extent[3];
      OK(domex_halo_extent(halo, extent));
      /* cell (nx, 0, 0): the first ghost beyond x's upper face, owned by the +x neighbour. */
      CHECK(field[(extent[0] - 1) + extent[0] * (1 + extent[1] * 1)] == (double)neighbour);
    }
    code = domex_halo_exchange_doubles(halo, rank_ == 0 ? 0 : 1, fields);
    if (rank_ == 0) CHECK(code == DOMEX_ERR_ARGUMENT && strstr(domex_last_error(), "field_count 0") != NULL);
    OK(domex_halo_exchange_doubles(halo, 1, fields));
  }
  direction[0] = 2;
  CHECK(domex_halo_neighbour(halo, direction, &neighbour) == DOMEX_ERR_ARGUMENT);
  free(field);
  OK(domex_halo_free(&halo));
}

/* ---- decomposition and migration ---------------------------------------- */

typedef struct {
  double position[3];
  int64_t id;
} Particle;

static double uniform(uint64_t* state) {
  *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(*state >> 11) / 9007199254740992.0;
}

static void test_migrate(domex_comm* comm, const char* algorithm) {
  enum { per_rank = 300 };
  const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  const int periodic[3] = {1, 1, 1};
  Particle particles[per_rank];
  double x[per_rank], y[per_rank], z[per_rank];
  domex_multisection *aos = NULL, *soa = NULL;
  domex_migration* plan = NULL;
  domex_buffer* moved = NULL;
  uint64_t state = 12345 + (uint64_t)rank_;
  int i, r, owner, wrong = 0;
  const void* bytes;
  size_t size, n, leaving;
  int64_t local[2] = {0, 0}, global[2];
  for (i = 0; i < per_rank; ++i) {
    const double u = uniform(&state);
    particles[i].position[0] = x[i] = u * u; /* clustered towards x = 0 */
    particles[i].position[1] = y[i] = uniform(&state);
    particles[i].position[2] = z[i] = uniform(&state);
    particles[i].id = (int64_t)rank_ * per_rank + i;
  }
  OK(domex_multisection_create(comm, lo, hi, NULL, periodic, 0.01, &aos));
  OK(domex_multisection_create(comm, lo, hi, NULL, periodic, 0.01, &soa));
  if (!aos || !soa) return;
  /* Positions inside structs (stride = element size) and in separate arrays
   * (stride = 8 bytes) give the same cuts. */
  OK(domex_multisection_rebalance(aos, per_rank, &particles[0].position[0], &particles[0].position[1],
                                  &particles[0].position[2], sizeof(Particle), NULL));
  OK(domex_multisection_rebalance(soa, per_rank, x, y, z, sizeof(double), NULL));
  for (r = 0; r < size_; ++r) {
    double lo_a[3], hi_a[3], lo_s[3], hi_s[3];
    OK(domex_multisection_box(aos, r, lo_a, hi_a));
    OK(domex_multisection_box(soa, r, lo_s, hi_s));
    CHECK(memcmp(lo_a, lo_s, sizeof lo_a) == 0 && memcmp(hi_a, hi_s, sizeof hi_a) == 0);
  }
  OK(domex_migration_create(comm, aos, per_rank, &particles[0].position[0], &particles[0].position[1],
                            &particles[0].position[2], sizeof(Particle), algorithm, &plan));
  OK(domex_migration_leaving(plan, &leaving));
  OK(domex_buffer_create(&moved));
  OK(domex_migrate(plan, per_rank, sizeof(Particle), particles, moved));
  OK(domex_buffer_data(moved, &bytes, &size));
  CHECK(size % sizeof(Particle) == 0);
  n = size / sizeof(Particle);
  for (i = 0; i < (int)n; ++i) {
    const Particle* p = (const Particle*)bytes + i;
    OK(domex_multisection_owner(aos, p->position, &owner));
    wrong |= owner != rank_;
    local[1] += p->id;
  }
  CHECK(!wrong);
  local[0] = (int64_t)n;
  MPI_Allreduce(local, global, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  {
    const int64_t total = (int64_t)size_ * per_rank;
    CHECK(global[0] == total);
    CHECK(global[1] == total * (total - 1) / 2);
  }

  /* Errors: on every rank, nothing moved, the handles usable. */
  CHECK(domex_migrate(plan, rank_ == 0 ? per_rank + 1 : per_rank, sizeof(Particle), particles, moved) ==
        DOMEX_ERR_ARGUMENT);
  CHECK(strstr(domex_last_error(), "rank 0") != NULL);
  OK(domex_buffer_data(moved, &bytes, &size));
  CHECK(size == 0);
  OK(domex_migration_free(&plan));
  CHECK(domex_migration_create(comm, aos, per_rank, rank_ == size_ - 1 ? NULL : x, y, z, sizeof(double), algorithm,
                               &plan) == DOMEX_ERR_ARGUMENT);
  CHECK(plan == NULL && strstr(domex_last_error(), "NULL") != NULL);
  CHECK(domex_migration_create(comm, aos, per_rank, x, y, z, sizeof(double), rank_ == 0 ? "nope" : algorithm,
                               &plan) == DOMEX_ERR_ARGUMENT);
  CHECK(plan == NULL && strstr(domex_last_error(), "nope") != NULL);
  CHECK(domex_multisection_rebalance(soa, per_rank, x, y, z, rank_ == 0 ? 0 : sizeof(double), NULL) ==
        DOMEX_ERR_ARGUMENT);
  {
    /* A position outside the box on a non-periodic axis: the library's error, everywhere. */
    domex_multisection* closed = NULL;
    double saved = x[0];
    OK(domex_multisection_create(comm, lo, hi, NULL, NULL, 0.0, &closed));
    if (rank_ == size_ - 1) x[0] = 2.0;
    CHECK(domex_multisection_rebalance(closed, per_rank, x, y, z, sizeof(double), NULL) == DOMEX_ERR_LIBRARY);
    x[0] = saved;
    OK(domex_multisection_rebalance(closed, per_rank, x, y, z, sizeof(double), NULL));
    OK(domex_multisection_free(&closed));
  }
  {
    const int bad[3] = {0, -2, 0};
    domex_multisection* none = NULL;
    CHECK(domex_multisection_create(comm, lo, hi, bad, periodic, 0.0, &none) == DOMEX_ERR_ARGUMENT);
    CHECK(none == NULL);
  }
  OK(domex_buffer_free(&moved));
  OK(domex_multisection_free(&aos));
  OK(domex_multisection_free(&soa));
}

/* ---- ghost particles ---------------------------------------------------- */

/* The domains of every rank as boxes (one per rank for a multisection, the
 * buckets for a bucket decomposition), for the brute force below. */
typedef struct {
  int count;
  double lo[64][3], hi[64][3];
  int rank[64];
} Pieces;

static double squared_box_distance(const double p[3], const double lo[3], const double hi[3]) {
  double sum = 0;
  int a;
  for (a = 0; a < 3; ++a) {
    const double d = p[a] < lo[a] ? lo[a] - p[a] : p[a] > hi[a] ? p[a] - hi[a] : 0.0;
    sum += d * d;
  }
  return sum;
}

/* Is q within `cutoff` of rank r's domain? */
static int near_domain(const Pieces* pieces, int r, const double q[3], double cutoff) {
  int b;
  for (b = 0; b < pieces->count; ++b)
    if (pieces->rank[b] == r && squared_box_distance(q, pieces->lo[b], pieces->hi[b]) <= cutoff * cutoff) return 1;
  return 0;
}

/* The 3 x 3 x 3 images of p (periodic on x and y only: the z images are
 * skipped) of a unit box; image 13 is p itself. */
static int image_of(const double p[3], int image, double q[3]) {
  const int s[3] = {image % 3 - 1, image / 3 % 3 - 1, image / 9 - 1};
  int a;
  if (s[2] != 0) return 0;
  for (a = 0; a < 3; ++a) q[a] = p[a] + s[a];
  return 1;
}

/* A ghost plan against brute force over every particle of every rank and
 * every image ((id, shifted position) sets equal), its ghost values after an
 * update (doubles, raw int64 ids, interleaved positions with their shift,
 * separate x, y, z), and the reverse sum of ghost counts. `all` holds every
 * rank's particles (rank r owns those with id % size == r, in id order);
 * positions in [0, 1)^3, periodic on x and y; `pieces` every rank's domain. */
static void check_ghost_plan(domex_ghost* ghost, const Pieces* pieces, const Particle* all, int total,
                             double cutoff) {
  size_t local = 0, ghosts = 0, entries = 0, g, i, n_sources = 0;
  const double* ghost_x = NULL;
  const int* sources = NULL;
  const size_t* source_offsets = NULL;
  int n, image, wrong = 0, matched = 0, expected = 0;
  double *value, *count, *x, *y, *z, (*xyz)[3];
  int64_t* id;
  char* used;
  OK(domex_ghost_local_count(ghost, &local));
  OK(domex_ghost_count(ghost, &ghosts));
  OK(domex_ghost_size(ghost, &entries));
  OK(domex_ghost_positions(ghost, &ghost_x));
  OK(domex_ghost_sources(ghost, &n_sources, &sources, &source_offsets));
  CHECK(entries == local + ghosts);
  CHECK(n_sources == 0 || source_offsets[n_sources] == ghosts);
  for (i = 0; i < n_sources; ++i)
    CHECK(sources[i] >= 0 && sources[i] < size_ && (i == 0 || sources[i - 1] < sources[i]));
  value = malloc((entries + 1) * sizeof *value);
  count = malloc((entries + 1) * sizeof *count);
  x = malloc((entries + 1) * sizeof *x);
  y = malloc((entries + 1) * sizeof *y);
  z = malloc((entries + 1) * sizeof *z);
  xyz = malloc((entries + 1) * sizeof *xyz);
  id = malloc((entries + 1) * sizeof *id);
  used = calloc(ghosts + 1, 1);
  /* Owned entries: this rank's particles in id order. */
  for (n = 0, i = 0; n < total; ++n) {
    if (n % size_ != rank_) continue;
    value[i] = 0.5 * (double)all[n].id;
    id[i] = all[n].id;
    memcpy(xyz[i], all[n].position, sizeof xyz[i]);
    x[i] = all[n].position[0];
    y[i] = all[n].position[1];
    z[i] = all[n].position[2];
    ++i;
  }
  CHECK(i == local);
  for (g = local; g < entries; ++g) {
    value[g] = x[g] = y[g] = z[g] = -1.0;
    id[g] = -1;
    xyz[g][0] = xyz[g][1] = xyz[g][2] = -1.0;
  }
  {
    void* fields[3];
    const size_t sizes[3] = {sizeof(double), sizeof(int64_t), sizeof(double[3])};
    const ptrdiff_t shifts[3] = {-1, -1, 0};
    fields[0] = value;
    fields[1] = id;
    fields[2] = xyz;
    OK(domex_ghost_update(ghost, 3, fields, sizes, shifts));
    OK(domex_ghost_update_positions(ghost, x, y, z, sizeof(double)));
  }
  /* Every ghost is a distinct (id, image) of the brute force, with its values. */
  for (g = 0; g < ghosts; ++g) {
    const double* q = ghost_x + 3 * g;
    const size_t e = local + g;
    wrong |= id[e] < 0 || id[e] >= total || value[e] != 0.5 * (double)id[e];
    wrong |= memcmp(xyz[e], q, sizeof xyz[e]) != 0 || x[e] != q[0] || y[e] != q[1] || z[e] != q[2];
    if (id[e] < 0 || id[e] >= total) continue;
    for (image = 0; image < 27; ++image) {
      double p[3];
      if (!image_of(all[id[e]].position, image, p)) continue;
      if (fabs(p[0] - q[0]) < 1e-12 && fabs(p[1] - q[1]) < 1e-12 && p[2] == q[2]) break;
    }
    wrong |= image == 27;
  }
  CHECK(!wrong);
  /* Brute force: as many ghosts as (particle, image) pairs within the cutoff,
   * own particles unshifted excluded; with the distinct matches above, the
   * sets are equal. */
  for (n = 0; n < total; ++n)
    for (image = 0; image < 27; ++image) {
      double q[3];
      if (!image_of(all[n].position, image, q) || (n % size_ == rank_ && image == 13)) continue;
      if (near_domain(pieces, rank_, q, cutoff)) {
        ++expected;
        for (g = 0; g < ghosts; ++g)
          if (!used[g] && id[local + g] == all[n].id && fabs(ghost_x[3 * g] - q[0]) < 1e-12 &&
              fabs(ghost_x[3 * g + 1] - q[1]) < 1e-12 && ghost_x[3 * g + 2] == q[2]) {
            used[g] = 1;
            ++matched;
            break;
          }
      }
    }
  CHECK((size_t)expected == ghosts);
  CHECK(matched == expected);

  /* Reverse sum: every ghost entry 1, owned 0: each owner gets the number of
   * (rank, image) copies of its particle; a second field adds 2 per copy. */
  for (g = 0; g < entries; ++g) {
    count[g] = g < local ? 0.0 : 1.0;
    value[g] = g < local ? 100.0 : 2.0;
  }
  {
    double* fields[2];
    fields[0] = count;
    fields[1] = value;
    OK(domex_ghost_reverse_sum_doubles(ghost, 2, fields));
  }
  wrong = 0;
  for (n = 0, i = 0; n < total; ++n) {
    int copies = 0, r;
    if (n % size_ != rank_) continue;
    for (r = 0; r < size_; ++r)
      for (image = 0; image < 27; ++image) {
        double q[3];
        if (!image_of(all[n].position, image, q) || (r == rank_ && image == 13)) continue;
        copies += near_domain(pieces, r, q, cutoff);
      }
    wrong |= count[i] != (double)copies || value[i] != 100.0 + 2.0 * copies;
    ++i;
  }
  for (g = local; g < entries; ++g) wrong |= count[g] != 1.0 || value[g] != 2.0; /* ghosts left as they were */
  CHECK(!wrong);

  free(value);
  free(count);
  free(x);
  free(y);
  free(z);
  free(xyz);
  free(id);
  free(used);
}

/* Every rank's particles: id n at a hashed position in [0, 1)^3, owned by rank n % size. */
static Particle* ghost_particles(int total) {
  Particle* all = malloc((size_t)total * sizeof *all);
  uint64_t state = 2026;
  int n;
  for (n = 0; n < total; ++n) {
    const double u = uniform(&state);
    all[n].position[0] = u * u; /* clustered towards x = 0 */
    all[n].position[1] = uniform(&state);
    all[n].position[2] = uniform(&state);
    all[n].id = n;
  }
  return all;
}

/* This rank's particles' x, y, z (ids n % size == rank, ascending). */
static size_t owned_positions(const Particle* all, int total, double* x, double* y, double* z) {
  size_t i = 0;
  int n;
  for (n = rank_; n < total; n += size_) {
    x[i] = all[n].position[0];
    y[i] = all[n].position[1];
    z[i] = all[n].position[2];
    ++i;
  }
  return i;
}

static void test_ghost(domex_comm* comm) {
  const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  const int periodic[3] = {1, 1, 0}, bucket_counts[3] = {4, 4, 3};
  const int total = 60 * size_;
  Particle* all = ghost_particles(total);
  double *x = malloc((size_t)total * sizeof *x), *y = malloc((size_t)total * sizeof *y),
         *z = malloc((size_t)total * sizeof *z);
  const size_t count = owned_positions(all, total, x, y, z);
  static Pieces pieces;
  domex_multisection* multisection = NULL;
  domex_buckets* buckets = NULL;
  domex_ghost* ghost = NULL;
  double cutoff;
  int r, b;

  /* Multisection: one box per rank; cutoffs within one domain and over two. */
  OK(domex_multisection_create(comm, lo, hi, NULL, periodic, 0.0, &multisection));
  OK(domex_multisection_rebalance(multisection, count, x, y, z, sizeof(double), NULL));
  pieces.count = size_;
  for (r = 0; r < size_; ++r) {
    OK(domex_multisection_box(multisection, r, pieces.lo[r], pieces.hi[r]));
    pieces.rank[r] = r;
  }
  for (cutoff = 0.1; cutoff < 0.5; cutoff += 0.3) {
    OK(domex_ghost_create_multisection(comm, multisection, count, x, y, z, sizeof(double), cutoff, &ghost));
    if (ghost) check_ghost_plan(ghost, &pieces, all, total, cutoff);
    OK(domex_ghost_free(&ghost));
    CHECK(ghost == NULL);
  }

  /* Buckets: the union of a rank's buckets, owners found through the C API. */
  OK(domex_buckets_create(comm, lo, hi, bucket_counts, periodic, &buckets));
  OK(domex_buckets_rebalance(buckets, count, x, y, z, sizeof(double), NULL));
  pieces.count = bucket_counts[0] * bucket_counts[1] * bucket_counts[2];
  for (b = 0; b < pieces.count; ++b) {
    const int index[3] = {b % bucket_counts[0], b / bucket_counts[0] % bucket_counts[1],
                          b / (bucket_counts[0] * bucket_counts[1])};
    double centre[3];
    int a;
    for (a = 0; a < 3; ++a) {
      pieces.lo[b][a] = lo[a] + (hi[a] - lo[a]) * index[a] / bucket_counts[a];
      pieces.hi[b][a] = lo[a] + (hi[a] - lo[a]) * (index[a] + 1) / bucket_counts[a];
      centre[a] = 0.5 * (pieces.lo[b][a] + pieces.hi[b][a]);
    }
    OK(domex_buckets_owner(buckets, centre, &pieces.rank[b]));
  }
  OK(domex_ghost_create_buckets(comm, buckets, count, x, y, z, sizeof(double), 0.2, &ghost));
  if (ghost) check_ghost_plan(ghost, &pieces, all, total, 0.2);

  /* Rebuild after a drift (positions wrapped back into the box by hand). */
  {
    int n;
    for (n = 0; n < total; ++n) all[n].position[0] = fmod(all[n].position[0] + 0.37, 1.0);
    owned_positions(all, total, x, y, z);
    OK(domex_ghost_rebuild(ghost, count, x, y, z, sizeof(double)));
    if (ghost) check_ghost_plan(ghost, &pieces, all, total, 0.2);
  }
  OK(domex_ghost_free(&ghost));
  OK(domex_buckets_free(&buckets));
  OK(domex_multisection_free(&multisection));
  free(all);
  free(x);
  free(y);
  free(z);
}

static void test_ghost_errors(domex_comm* comm) {
  const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
  const int periodic[3] = {1, 1, 1}, bucket_counts[3] = {4, 4, 4};
  double x[3] = {0.1, 0.5, 0.9}, y[3] = {0.5, 0.5, 0.5}, z[3] = {0.2, 0.4, 0.6};
  domex_buckets* buckets = NULL;
  domex_ghost *ghost = NULL, *none = NULL;
  size_t entries = 0, local = 0;
  double *field, *fields[2];
  int code;

  OK(domex_buckets_create(comm, lo, hi, bucket_counts, periodic, &buckets));
  if (!buckets) return;
  {
    const int bad[3] = {4, rank_ == size_ - 1 ? 0 : 4, 4};
    domex_buckets* no_buckets = NULL;
    CHECK(domex_buckets_create(comm, lo, hi, bad, periodic, &no_buckets) == DOMEX_ERR_ARGUMENT);
    CHECK(no_buckets == NULL && strstr(domex_last_error(), "below 1") != NULL);
  }
  /* Cutoffs: over half the period on rank 0, NaN everywhere, different per rank. */
  code = domex_ghost_create_buckets(comm, buckets, 3, x, y, z, sizeof(double), rank_ == 0 ? 0.6 : 0.2, &none);
  CHECK(code == DOMEX_ERR_LIBRARY && none == NULL && strstr(domex_last_error(), "half the periodic length") != NULL);
  CHECK(domex_ghost_create_buckets(comm, buckets, 3, x, y, z, sizeof(double), NAN, &none) ==
        DOMEX_ERR_LIBRARY);
  if (size_ > 1) {
    code = domex_ghost_create_buckets(comm, buckets, 3, x, y, z, sizeof(double), 0.1 + 0.01 * rank_, &none);
    CHECK(code == DOMEX_ERR_LIBRARY && strstr(domex_last_error(), "different cutoffs") != NULL);
  }
  /* A NaN position and a NULL array: on every rank. */
  x[1] = rank_ == size_ - 1 ? NAN : 0.5;
  CHECK(domex_ghost_create_buckets(comm, buckets, 3, x, y, z, sizeof(double), 0.2, &none) == DOMEX_ERR_LIBRARY);
  CHECK(none == NULL && strstr(domex_last_error(), "NaN") != NULL);
  x[1] = 0.5;
  CHECK(domex_ghost_create_buckets(comm, buckets, 3, x, rank_ == 0 ? NULL : y, z, sizeof(double), 0.2, &none) ==
        DOMEX_ERR_ARGUMENT);
  CHECK(none == NULL && strstr(domex_last_error(), "rank 0") != NULL);
  CHECK(domex_ghost_create_buckets(NULL, buckets, 3, x, y, z, sizeof(double), 0.2, &none) == DOMEX_ERR_NULL);
  CHECK(domex_ghost_create_multisection(comm, NULL, 3, x, y, z, sizeof(double), 0.2, &none) == DOMEX_ERR_NULL);

  OK(domex_ghost_create_buckets(comm, buckets, 3, x, y, z, sizeof(double), 0.2, &ghost));
  if (!ghost) return;
  OK(domex_ghost_size(ghost, &entries));
  OK(domex_ghost_local_count(ghost, &local));
  CHECK(local == 3 && entries >= 3);
  field = malloc(entries * sizeof *field);
  {
    size_t i;
    for (i = 0; i < entries; ++i) field[i] = i < local ? 1.0 : -1.0;
  }
  /* A NULL field on rank 0: DOMEX_ERR_ARGUMENT on every rank (one code on
   * every rank, as domex.h promises), the message naming rank 0 elsewhere;
   * no ghost changed; then the plan still works. */
  fields[0] = field;
  fields[1] = rank_ == 0 ? NULL : field;
  code = domex_ghost_update_doubles(ghost, 2, fields);
  if (rank_ == 0) CHECK(code == DOMEX_ERR_ARGUMENT && strstr(domex_last_error(), "field 1 is NULL") != NULL);
  else CHECK(code == DOMEX_ERR_ARGUMENT && strstr(domex_last_error(), "rank 0") != NULL);
  CHECK(entries == local || field[entries - 1] == -1.0);
  code = domex_ghost_reverse_sum_doubles(ghost, rank_ == size_ - 1 ? 0 : 1, fields);
  CHECK(code != DOMEX_SUCCESS);
  if (rank_ == size_ - 1) CHECK(strstr(domex_last_error(), "field_count 0") != NULL);
  {
    const size_t sizes[1] = {sizeof(double)};
    const ptrdiff_t bad_offset[1] = {rank_ == 0 ? 1 : -1};
    void* raw[1];
    raw[0] = field;
    code = domex_ghost_update(ghost, 1, raw, sizes, bad_offset);
    CHECK(code != DOMEX_SUCCESS);
    if (rank_ == 0) CHECK(code == DOMEX_ERR_ARGUMENT && strstr(domex_last_error(), "position offset 1") != NULL);
    CHECK(domex_ghost_update(ghost, 1, raw, NULL, NULL) != DOMEX_SUCCESS);
  }
  CHECK(domex_ghost_update_positions(ghost, x, y, z, rank_ == 0 ? 3 : sizeof(double)) != DOMEX_SUCCESS);
  OK(domex_ghost_update_doubles(ghost, 1, fields));
  {
    size_t i;
    for (i = local; i < entries; ++i) CHECK(field[i] == 1.0);
  }
  /* A failed rebuild leaves the plan as it was. */
  x[0] = rank_ == 0 ? NAN : 0.1;
  CHECK(domex_ghost_rebuild(ghost, 3, x, y, z, sizeof(double)) == DOMEX_ERR_LIBRARY);
  {
    size_t after = 0;
    OK(domex_ghost_size(ghost, &after));
    CHECK(after == entries);
  }
  CHECK(domex_ghost_size(NULL, &entries) == DOMEX_ERR_NULL);
  CHECK(domex_ghost_positions(ghost, NULL) == DOMEX_ERR_NULL);
  free(field);
  OK(domex_ghost_free(&ghost));
  OK(domex_ghost_free(&ghost)); /* NULL accepted */
  OK(domex_buckets_free(&buckets));
}

/* ---- profile ------------------------------------------------------------ */

static void test_profile(domex_comm* comm) {
  domex_profile* profile = NULL;
  double seconds = -1;
  char small[4], *json;
  size_t length = 0, again = 0;
  OK(domex_profile_create(&profile));
  OK(domex_profile_begin(profile, "kernel"));
  CHECK(domex_profile_begin(profile, "kernel") == DOMEX_ERR_ARGUMENT);
  OK(domex_profile_end(profile, "kernel"));
  CHECK(domex_profile_end(profile, "kernel") == DOMEX_ERR_ARGUMENT);
  CHECK(strstr(domex_last_error(), "was not begun") != NULL);
  OK(domex_profile_seconds(profile, "kernel", &seconds));
  CHECK(seconds >= 0);
  OK(domex_profile_add(profile, "exchange particles", 1.5));
  OK(domex_profile_add(profile, "exchange particles", 0.5));
  OK(domex_profile_seconds(profile, "exchange particles", &seconds));
  CHECK(seconds == 2.0);
  CHECK(domex_profile_add(profile, NULL, 1.0) == DOMEX_ERR_NULL);
  OK(domex_profile_json(profile, comm, NULL, 0, &length));
  CHECK(length > 0);
  OK(domex_profile_json(profile, comm, small, sizeof small, &again));
  CHECK(again == length && strlen(small) == sizeof small - 1);
  json = malloc(length + 1);
  OK(domex_profile_json(profile, comm, json, length + 1, &again));
  CHECK(strlen(json) == length && strstr(json, "\"exchange particles\"") != NULL && strstr(json, "kernel") != NULL);
  free(json);
  OK(domex_profile_print(profile, comm, "test_capi"));
  OK(domex_profile_free(&profile));
}

int main(int argc, char** argv) {
  static const char* algorithms[] = {"automatic",      "alltoall",  "sendrecv_reduce", "nbx",
                                     "reduce_scatter", "rma_fence", "rma_passive",     "grid"};
  domex_comm *comm = NULL, *from_fortran = NULL;
  int worst = 0, a, rank = -1, size = -1;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  CHECK(strcmp(domex_last_error(), "") == 0);

  OK(domex_comm_create(MPI_COMM_WORLD, &comm));
  OK(domex_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), &from_fortran));
  OK(domex_comm_rank(from_fortran, &rank));
  OK(domex_comm_size(comm, &size));
  CHECK(rank == rank_ && size == size_);
  CHECK(domex_comm_create(MPI_COMM_NULL, &from_fortran) == DOMEX_ERR_ARGUMENT);
  CHECK(from_fortran != NULL); /* untouched by the failed call */
  CHECK(domex_comm_create(MPI_COMM_WORLD, NULL) == DOMEX_ERR_NULL);
  CHECK(domex_comm_rank(NULL, &rank) == DOMEX_ERR_NULL);
  OK(domex_comm_free(&from_fortran));
  CHECK(from_fortran == NULL);

  if (comm) {
    for (a = 0; a < (int)(sizeof algorithms / sizeof algorithms[0]); ++a) test_exchange(comm, algorithms[a]);
    test_exchange_errors(comm);
    test_halo(comm, 26, 1);
    test_halo(comm, 26, 2);
    test_halo(comm, 6, 2);
    test_halo_reverse(comm, 26, 1);
    test_halo_reverse(comm, 26, 2);
    test_halo_reverse(comm, 6, 2);
    test_halo_errors(comm);
    test_migrate(comm, "automatic");
    test_migrate(comm, "nbx");
    test_profile(comm);
    test_ghost(comm);
    test_ghost_errors(comm);
    OK(domex_comm_free(&comm));
  }

  MPI_Allreduce(&failures, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank_ == 0) printf("test_capi: %s at np %d\n", worst ? "FAILED" : "passed", size_);
  MPI_Finalize();
  return worst ? 1 : 0;
}
