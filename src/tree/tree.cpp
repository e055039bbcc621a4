// SPDX-License-Identifier: BSD-3-Clause
// TreeForce: local tree -> LET -> exchange -> global tree -> group walk -> kernel.

#include <domex/comm/simulated.hpp>
#include <domex/exchange/exchange.hpp>
#include <domex/tree/morton.hpp>
#include <domex/tree/sort.hpp>
#include <domex/tree/tree.hpp>

#include "simd.hpp"
#include "threads.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace domex {

std::string_view to_string(LetMode mode) noexcept {
  switch (mode) {
    case LetMode::alltoallv: return "alltoallv";
    case LetMode::p2p_exact: return "p2p_exact";
    case LetMode::p2p_fast: return "p2p_fast";
    case LetMode::sparse: return "sparse";
  }
  return "?";
}

LetMode let_mode_from_string(std::string_view name) {
  for (LetMode mode : {LetMode::alltoallv, LetMode::p2p_exact, LetMode::p2p_fast, LetMode::sparse})
    if (to_string(mode) == name) return mode;
  fail("let_mode_from_string", "unknown LET mode '" + std::string(name) +
                                   "' (valid: alltoallv, p2p_exact, p2p_fast, sparse)");
}

std::string_view to_string(Opening opening) noexcept {
  switch (opening) {
    case Opening::cell: return "cell";
    case Opening::particles: return "particles";
  }
  return "?";
}

Opening opening_from_string(std::string_view name) {
  for (Opening opening : {Opening::cell, Opening::particles})
    if (to_string(opening) == name) return opening;
  fail("opening_from_string", "unknown opening test '" + std::string(name) + "' (valid: cell, particles)");
}

namespace {

/// One LET entry: a particle or a pseudo-particle standing for a cell, with
/// the Morton key of its position. A particle has no quadrupole: its first
/// three slots carry its velocity instead (zero unless velocities were given).
struct LetItem {
  Moments moments;
  MortonKey key;
  std::uint64_t pseudo;
  double extent;  ///< a pseudo-particle: the b_max of its cell; a particle: 0
};

/// What every rank learns of every other rank each call (one allgather).
struct RankSummary {
  Box bounds;  ///< tight box of its particles; lo > hi when it has none
  Moments root;
  double bmax;  ///< of the root cell
  std::uint64_t count;
};

/// Where a source of the global tree came from, so that a call that re-uses
/// the lists can refresh its values.
struct SourceOrigin {
  enum Kind : std::uint32_t { local, received, stand_in };
  Kind kind;
  std::uint32_t index;  ///< sorted local index, received item, or rank
};

/// An item of a LET to build again on a re-use call: a local cell (moments) or
/// a local particle (sorted index).
struct LetRef {
  std::uint32_t index;
  std::uint32_t is_cell;
};

bool overlaps(const Box& a, const Box& b) noexcept {
  for (int k = 0; k < 3; ++k)
    if (a.hi[k] < b.lo[k] || b.hi[k] < a.lo[k]) return false;
  return true;
}

/// A rank's opening length, as for a cell: with Opening::cell
/// cell_edge_factor x the longest edge of its particles' box, or the farthest
/// corner from its centre of mass if farther; with Opening::particles its
/// root cell's b_max, or that corner if nearer.
double opening_length(const RankSummary& rank, Opening opening) noexcept {
  const Box& box = rank.bounds;
  const Point& centre = rank.root.centre;
  double b2 = 0;
  for (int a = 0; a < 3; ++a) {
    const double far = std::max({centre[a] - box.lo[a], box.hi[a] - centre[a], 0.0});
    b2 += far * far;
  }
  if (opening == Opening::particles) return std::min(rank.bmax, std::sqrt(b2));
  const double edge = std::max({box.hi[0] - box.lo[0], box.hi[1] - box.lo[1], box.hi[2] - box.lo[2]});
  return std::max(cell_edge_factor * edge, std::sqrt(b2));
}

/// The opening test: a source is used whole if the distance from the target
/// box to its centre of mass exceeds size / theta (FDPS's test, with size the
/// cell's edge or its b_max if longer); a source whose box overlaps the
/// targets is always opened, so no particle sees itself inside a cell.
/// Squared distance between two boxes (0 when they touch or overlap).
double box_distance2(const Box& a, const Box& b) noexcept {
  double d2 = 0;
  for (int k = 0; k < 3; ++k) {
    const double d = std::max({a.lo[k] - b.hi[k], b.lo[k] - a.hi[k], 0.0});
    d2 += d * d;
  }
  return d2;
}

/// ... and with a search radius (search2 = its square, > 0), a source whose
/// box comes within it of the targets is opened too, down to particles.
bool well_separated(const Box& targets, const Box& source_box, const Point& centre, double size, double theta2,
                    double search2) noexcept {
  return !overlaps(targets, source_box) && squared_distance(targets, centre) * theta2 > size * size &&
         (search2 == 0 || box_distance2(targets, source_box) > search2);
}

Box empty_box() noexcept {
  constexpr double inf = std::numeric_limits<double>::infinity();
  return {{inf, inf, inf}, {-inf, -inf, -inf}};
}

void extend(Box& box, const Point& p) noexcept {
  for (int a = 0; a < 3; ++a) {
    box.lo[a] = std::min(box.lo[a], p[a]);
    box.hi[a] = std::max(box.hi[a], p[a]);
  }
}

/// The smallest Morton cell containing `bounds`.
Box enclosing_cell(const Box& bounds, const Box& root) noexcept {
  const MortonKey a = morton_key_unchecked(bounds.lo, root), b = morton_key_unchecked(bounds.hi, root);
  int level = 0;
  while (level < morton_levels && morton_cell_of(a, level + 1) == morton_cell_of(b, level + 1)) ++level;
  return morton_cell_box(morton_cell_of(a, level), level, root);
}

int automatic_threads(const Comm& comm) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm.get(), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int ranks_on_node = 1;
  MPI_Comm_size(node, &ranks_on_node);
  MPI_Comm_free(&node);
  // omp_get_num_procs() honours this process's affinity mask, so a rank bound
  // to one core gets one thread.
  return std::max(1, omp_get_num_procs() / std::max(1, ranks_on_node));
}

/// A second moment as tree_detail::quadrupole_fp32 reads it: its six
/// components times 3 and its trace times 3/2, times `scale` (the inverse
/// square of the quadrupole term's unit), in fp32.
std::array<float, 8> scaled_quadrupole(const Quadrupole& q, double scale) {
  const double s3 = 3 * scale;
  return {static_cast<float>(q[0] * s3), static_cast<float>(q[1] * s3), static_cast<float>(q[2] * s3),
          static_cast<float>(q[3] * s3), static_cast<float>(q[4] * s3), static_cast<float>(q[5] * s3),
          static_cast<float>((q[0] + q[1] + q[2]) * 1.5 * scale), 0.0f};
}

/// With TreeOptions::fp64_accumulation: sources per fp32 partial sum.
constexpr std::size_t fp64_block = 64;

/// Per-thread buffers of the walk and the kernel, reused across groups.
struct ThreadBuffers {
  std::vector<std::uint32_t> stack, spj;
  // Particle list as ranges of sources, flattened: begin0, end0, begin1, ...,
  // in walk order (leaves are contiguous in the sorted sources: a range per
  // run of leaves taken one after another, a short walk output and a
  // contiguous gather).
  std::vector<std::uint32_t> epj;
  std::size_t epj_count = 0;
  // The kernel's list (fp32, relative to the group's origin): the cells of
  // spj in its first spj.size() slots, then the particles of epj. The walk
  // writes each cell's slot as it takes the cell, while the cell's centre is
  // still in cache, so the list needs no gather (nor copy) of cells; `packed`
  // says the walk did. (Packed into a separate array and copied after the
  // particles' gather: kernel phase 585 ms a step at 1e6 uniform, np 1,
  // Xeon; 558 ms this way.)
  std::vector<float> tx, ty, tz, ax, ay, az, sx, sy, sz, sm;
  bool packed = false;
  std::vector<Moments> spj_moments;
  // The quadrupole term's fp32 operands (tree_detail::quadrupole_fp32):
  // cells as 11 rows, targets and their sums, in the unit quadrupole_unit().
  std::vector<float> quad_cells, qx, qy, qz, qax, qay, qaz;
  std::vector<Epj> user_epj;
  std::vector<Point> acc;
  double walk_s = 0, kernel_s = 0;
  std::size_t epj_interactions = 0, spj_interactions = 0;
};

/// The part of a global-tree cell that the walk's bookkeeping reads, packed
/// into 20 bytes (a TreeCell spans three cache lines); the opening test reads
/// its children's WalkGeometry block, the list gather cell_xyzm.
struct WalkNode {
  std::uint32_t begin, end, first_child;
  /// Bits 0-26: its children's WalkGeometry block (0, the root's, for a
  /// leaf); 27-30: its child count (0-8); 31: a leaf holding LET
  /// pseudo-particles. (16 bytes a node, four to a cache line: the walk
  /// reads the nodes of an opened cell's children together.)
  std::uint32_t packed;
  static constexpr std::uint32_t block_bits = 27, block_mask = (std::uint32_t{1} << block_bits) - 1;
  [[nodiscard]] std::uint32_t block() const noexcept { return packed & block_mask; }
  [[nodiscard]] std::uint32_t child_count() const noexcept { return (packed >> block_bits) & 15u; }
  [[nodiscard]] bool has_pseudo() const noexcept { return (packed >> 31) != 0; }
};
static_assert(sizeof(WalkNode) == 16);

/// A group's origin for its fp32 lists: the centre of its box.
Point centre_of(const Box& box) noexcept {
  return {0.5 * (box.lo[0] + box.hi[0]), 0.5 * (box.lo[1] + box.hi[1]), 0.5 * (box.lo[2] + box.hi[2])};
}

/// How far ahead the gathers into key order and the scatter back fetch the
/// records they will touch (perm is random: each record a cache miss).
constexpr std::size_t fetch_ahead = 32;

float round_down(double v) noexcept {
  const auto f = static_cast<float>(v);
  return static_cast<double>(f) <= v ? f : std::nextafter(f, -std::numeric_limits<float>::infinity());
}
float round_up(double v) noexcept {
  const auto f = static_cast<float>(v);
  return static_cast<double>(f) >= v ? f : std::nextafter(f, std::numeric_limits<float>::infinity());
}

constexpr std::uint32_t pseudo_flag = 0x80000000u;  // an SPJ entry that is a LET pseudo-particle, not a cell

/// Numbers the cells with children 1, 2, ... in cell order (the others get
/// 0) and returns the next number. Each thread counts its share of the
/// cells, then numbers it from the counts of the shares before it. (On one
/// thread: 2.4 ms of link at 1e6 particles, np 1, Xeon, whatever the
/// thread count.)
std::uint32_t number_parents(std::span<const TreeCell> cells, std::span<std::uint32_t> numbers, int threads) {
  std::uint32_t next_free = 1;
  if (threads <= 1) {  // one pass
    for (std::size_t c = 0; c < cells.size(); ++c) numbers[c] = cells[c].child_count > 0 ? next_free++ : 0;
    return next_free;
  }
  std::vector<std::uint32_t> before(static_cast<std::size_t>(threads) + 1, 0);
#pragma omp parallel num_threads(threads)
  {
    const auto share = tree_detail::thread_share(0, cells.size());
    std::uint32_t count = 0;
    for (std::size_t c = share.first; c < share.last; ++c) count += cells[c].child_count > 0 ? 1 : 0;
    before[share.thread + 1] = count;
#pragma omp barrier
#pragma omp single
    {
      for (std::size_t k = 1; k <= share.threads; ++k) before[k] += before[k - 1];
      next_free = 1 + before[share.threads];
    }
    std::uint32_t next = 1 + before[share.thread];
    for (std::size_t c = share.first; c < share.last; ++c) numbers[c] = cells[c].child_count > 0 ? next++ : 0;
  }
  return next_free;
}

}  // namespace

/// The phases over the particles (sort, builds, link, scatter) take a thread
/// per this many local particles, the walk every thread. A lent 16-core Xeon
/// (2026-11-28, domex-ring --compare-legacy, np 1, sim/README.md "Threads")
/// ran them slower on 16 threads than on one at 2000 particles (local build
/// 287 against 147 us, global link 78 against 49, scatter 10 against 3.5)
/// and faster at 16000 (1.6x, 1.9x and 3.2x), while the walk gained 3.1x
/// even at 2000.
constexpr std::size_t particles_per_thread = 1024;

struct TreeForce::State {
  State(Comm& c, const TreeOptions& o) : comm(c), options(o) {}
  Comm& comm;
  TreeOptions options;
  int threads = 1;
  /// The threads of this call's phases that go over the particles (all but
  /// the walk): one per particles_per_thread local particles, at most
  /// `threads`. Set by compute().
  int team = 1;
  TreeStats stats;
  std::uint64_t calls = 0;
  bool check_accuracy = false;  // the next gravity compute() measures its error (TreeOptions::check_samples)

  // Local particles in Morton order.
  std::vector<KeyIndex> order;
  std::vector<MortonKey> keys;
  std::vector<Point> positions;
  std::vector<double> masses;
  std::vector<Point> velocities;  // empty unless given
  std::vector<std::size_t> perm;  // sorted index -> caller's index
  std::vector<Point> sorted_acc;
  Octree local;
  /// Target groups as [begin, end) ranges of the sorted particles: runs of
  /// consecutive group cells (Morton order) merged up to group_limit.
  std::vector<std::array<std::uint32_t, 2>> groups;
  std::vector<Box> group_boxes;
  std::vector<RankSummary> summaries;

  // LET sent: CSR by destination; refs to rebuild the items on re-use calls.
  std::vector<int> send_ranks;
  std::vector<std::size_t> send_offsets;
  std::vector<LetRef> send_refs;
  std::vector<LetItem> send_items;
  // LET received, sources ascending.
  std::vector<int> recv_ranks;
  std::vector<std::size_t> recv_offsets;
  std::vector<int> expected_sources;  // p2p: who sends to this rank, fixed when the lists are built
  std::vector<LetItem> received;

  // Sources of the global tree (local particles + LET), Morton order.
  std::vector<SourceOrigin> source_origin;
  std::vector<MortonKey> source_keys;
  std::vector<Point> source_positions;
  std::vector<double> source_x, source_y, source_z;  // the same positions as arrays, for NearSources
  // x, y, z, mass interleaved (4 doubles a source) for the list gather, with
  // tree_detail::list_slack() sources of slack.
  std::vector<double> source_xyzm;
  std::vector<double> source_masses;
  std::vector<Point> source_velocities;  // empty unless velocities were given
  std::vector<Quadrupole> source_quadrupoles;
  std::vector<double> source_extents;  // b_max of the cell a pseudo-particle stands for; 0 for particles
  std::vector<std::uint8_t> source_pseudo;
  // The sources' positions and masses as read by the walk and the kernel:
  // source_positions and source_masses, or, when nothing came from other
  // ranks, the local particles' own arrays (not copied).
  std::span<const Point> sources_at;
  std::span<const double> sources_mass;
  Octree global;
  bool global_is_local = false;  // nothing received: the local tree serves as the global one
  [[nodiscard]] const Octree& source_tree() const { return global_is_local ? local : global; }
  std::vector<WalkNode> walk_nodes;
  std::vector<std::uint32_t> walk_blocks;  // each cell's children's WalkGeometry block (0: none)
  std::vector<std::size_t> remote_places;  // build_global_tree's scratch: each remote source's place
  // The opening test's cell geometry (tree_detail::WalkGeometry's blocks,
  // from the first 64-byte boundary on).
  std::vector<double> walk_geometry;
  tree_detail::WalkGeometry geometry{};
  std::vector<double> cell_xyzm;  // each cell's centre and mass, 4 doubles a cell, for the list gather
  // With quadrupoles: each cell's second moment as scaled_quadrupole() gives
  // it (3 S and 3/2 tr S in fp32, in quadrupole_unit(); half a cache line a cell).
  std::vector<std::array<float, 8>> cell_quadrupoles;

  // Interaction lists kept for re-use (reuse > 1), per group.
  std::vector<std::vector<std::uint32_t>> list_epj, list_spj;

  std::vector<ThreadBuffers> buffers;
  // The LET build in parallel: tasks (a receiver's LET cut into subtrees
  // whose walks, concatenated in order, are that LET), each thread's output,
  // and where each task's output went.
  struct LetTask {
    std::uint32_t message;  // index in send_ranks
    std::uint32_t cell;     // the subtree's root; stand_in: the root moment stands in for the LET
    std::uint32_t stand_in;
  };
  struct LetOutput {
    std::uint32_t thread;
    std::size_t offset, count;
  };
  std::vector<LetTask> let_tasks;
  std::vector<LetOutput> let_outputs;
  std::vector<std::size_t> let_task_offsets;
  std::vector<std::vector<LetRef>> let_thread_refs;
  std::vector<std::vector<std::uint32_t>> let_thread_stacks;
  std::vector<std::uint32_t> let_frontier, let_next_frontier;

  [[nodiscard]] double theta2() const { return options.theta * options.theta; }
  [[nodiscard]] double opening_of(const TreeCell& cell) const {
    return options.opening == Opening::particles ? cell.bmax : cell.opening;
  }
  [[nodiscard]] double search2() const { return options.search_radius * options.search_radius; }
  [[nodiscard]] bool separated(const Box& targets, const Box& source_box, const Point& centre, double size) const {
    return well_separated(targets, source_box, centre, size, theta2(), search2());
  }
  [[nodiscard]] bool root_stands_in(int from, int to) const;
  [[nodiscard]] bool sends_let(int from, int to) const;
  void build_local_tree(std::span<const Point> x, std::span<const double> m, std::span<const Point> v, bool build);
  void build_let(bool build);
  void exchange_let(bool build);
  void build_global_tree(bool build, bool near_sources);
  /// The interaction lists of a group; with `origin`, the cell list is also
  /// packed for the fp32 kernel (the first slots of b.sx, sy, sz, sm, relative to origin).
  void walk(const Box& targets, ThreadBuffers& b, const Point* origin = nullptr) const;
  void evaluate(std::uint32_t group, ThreadBuffers& b, const UserKernel* user, const NearKernel* near);
  /// The monopole and quadrupole terms of the cells and LET pseudo-particles
  /// of b.spj (their centres and masses in the kernel's list, before its
  /// particles) on the group's targets (b.tx, ty, tz), in fp32, added to acc.
  void quadrupole_term(ThreadBuffers& b, std::span<Point> acc) const;
  /// The quadrupole term's unit of length: a power of two >= the root's largest edge.
  [[nodiscard]] double quadrupole_unit() const;
  void forces(const UserKernel* user, const NearKernel* near, bool build, Profile& profile);
  void compute(std::span<const Point> x, std::span<const double> m, std::span<const Point> v, std::span<Point> a,
               const UserKernel* user, const NearKernel* near, Profile& profile);
  /// Gravity at the angle that the measured error allows (TreeOptions::check_samples).
  void compute_checked(std::span<const Point> x, std::span<const double> m, std::span<Point> a, Profile& profile);
};

bool TreeForce::State::root_stands_in(int from, int to) const {
  const RankSummary &source = summaries[static_cast<std::size_t>(from)], &target = summaries[static_cast<std::size_t>(to)];
  if (from == to || source.count == 0 || target.count == 0) return false;
  return separated(target.bounds, source.bounds, source.root.centre, opening_length(source, options.opening));
}

bool TreeForce::State::sends_let(int from, int to) const {
  const RankSummary &source = summaries[static_cast<std::size_t>(from)], &target = summaries[static_cast<std::size_t>(to)];
  if (from == to || source.count == 0 || target.count == 0) return false;
  switch (options.let) {
    case LetMode::alltoallv: return true;
    case LetMode::p2p_exact:
      return !separated(enclosing_cell(target.bounds, options.root), source.bounds, source.root.centre,
                        opening_length(source, options.opening));
    case LetMode::p2p_fast:
    case LetMode::sparse: return !root_stands_in(from, to);
  }
  return true;
}

void TreeForce::State::build_local_tree(std::span<const Point> x, std::span<const double> m, std::span<const Point> v,
                                        bool build) {
  const std::size_t n = x.size();
  if (build) {
    double start = MPI_Wtime();
    order.resize(n);
#pragma omp parallel num_threads(team)
    {
      const auto share = tree_detail::thread_share(0, n);
      morton_key_indices(x.subspan(share.first, share.last - share.first), options.root,
                         std::span(order).subspan(share.first), share.first);
    }
    stats.keys_s += MPI_Wtime() - start;
    start = MPI_Wtime();
    if (options.sort == SortMethod::merge)
      merge_sort_by_key(order, team);
    else
      sort_by_key(order, team);
    stats.sort_s += MPI_Wtime() - start;
    start = MPI_Wtime();
    keys.resize(n);
    perm.resize(n);
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::size_t k = 0; k < n; ++k) keys[k] = order[k].key, perm[k] = order[k].index;
  }
  double start = MPI_Wtime();
  positions.resize(n);
  masses.resize(n);
  // Gathers into key order, each record fetched fetch_ahead iterations
  // early (link 66 -> 60 ms at 1e6 uniform on one thread, Xeon).
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::size_t k = 0; k < n; ++k) {
    if (k + fetch_ahead < n)
      __builtin_prefetch(&x[perm[k + fetch_ahead]]), __builtin_prefetch(&m[perm[k + fetch_ahead]]);
    positions[k] = x[perm[k]], masses[k] = m[perm[k]];
  }
  velocities.resize(v.empty() ? 0 : n);
  if (!v.empty())
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::size_t k = 0; k < n; ++k) {
      if (k + fetch_ahead < n) __builtin_prefetch(&v[perm[k + fetch_ahead]]);
      velocities[k] = v[perm[k]];
    }
  if (build) {
    local.build(keys, options.root, options.leaf_limit, team);
    // With merge_groups, consecutive sibling group cells (contiguous in the
    // sorted array) are merged while the run stays within group_limit.
    groups.clear();
    std::vector<std::uint32_t> group_first_cell;  // the first cell of each group
    const auto limit = static_cast<std::uint32_t>(options.group_limit);
    for (std::uint32_t c : local.groups(static_cast<std::size_t>(options.group_limit))) {
      const TreeCell& cell = local.cells()[c];
      if (!groups.empty()) {
        auto& last = groups.back();
        const TreeCell& first_cell = local.cells()[group_first_cell.back()];
        const bool same_parent_cell =
            first_cell.level == cell.level && first_cell.level > 0 &&
            morton_cell_of(first_cell.key, first_cell.level - 1) == morton_cell_of(cell.key, cell.level - 1);
        if (options.merge_groups && last[1] == cell.begin && cell.end - last[0] <= limit && same_parent_cell) {
          last[1] = cell.end;
          continue;
        }
      }
      groups.push_back({cell.begin, cell.end});
      group_first_cell.push_back(c);
    }
    stats.link_s += MPI_Wtime() - start;
    start = MPI_Wtime();
  }
  local.compute_moments(positions, masses, {}, {}, options.quadrupole, team);
  group_boxes.resize(groups.size());
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::size_t g = 0; g < groups.size(); ++g) {
    Box box = empty_box();
    for (std::uint32_t k = groups[g][0]; k < groups[g][1]; ++k) extend(box, positions[k]);
    group_boxes[g] = box;
  }
  stats.moments_s += MPI_Wtime() - start;
}

void TreeForce::State::build_let(bool build) {
  RankSummary mine{empty_box(), local.root().moments, local.root().bmax, positions.size()};
  // The box is read only between two ranks (what one sends the other): not
  // computed on one rank (3 ms a step at 1e6 particles, Xeon).
  if (comm.size() > 1) {
    // Exact minima and maxima: the same box whatever the threads.
    double lo[3] = {mine.bounds.lo[0], mine.bounds.lo[1], mine.bounds.lo[2]};
    double hi[3] = {mine.bounds.hi[0], mine.bounds.hi[1], mine.bounds.hi[2]};
    const std::size_t n = positions.size();
#pragma omp parallel for num_threads(team) schedule(static) reduction(min : lo[:3]) reduction(max : hi[:3])
    for (std::size_t k = 0; k < n; ++k)
      for (int a = 0; a < 3; ++a) lo[a] = std::min(lo[a], positions[k][a]), hi[a] = std::max(hi[a], positions[k][a]);
    mine.bounds = Box{{lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}};
  }
  summaries = comm.allgather(mine);
  const int me = comm.rank();
  if (build) {
    send_ranks.clear();
    send_offsets.assign(1, 0);
    send_refs.clear();
    // Tasks, in LET order: per receiver, a frontier of local cells whose
    // walks concatenated give its LET. A cell that the walk would open is
    // replaced by its non-empty children (the same test as the walk), level
    // by level, until there are ~8 tasks per thread; one thread: the root.
    let_tasks.clear();
    const std::size_t want = team > 1 ? 8 * static_cast<std::size_t>(team) : 1;
    for (int to = 0; to < comm.size(); ++to) {
      if (!sends_let(me, to)) continue;
      const auto message = static_cast<std::uint32_t>(send_ranks.size());
      send_ranks.push_back(to);
      if (root_stands_in(me, to)) {
        let_tasks.push_back({message, 0, 1});
        continue;
      }
      const Box& target = summaries[static_cast<std::size_t>(to)].bounds;
      let_frontier.assign(1, 0);
      while (let_frontier.size() < want) {
        let_next_frontier.clear();
        bool opened = false;
        for (std::uint32_t c : let_frontier) {
          const TreeCell& cell = local.cells()[c];
          if (cell.count() == 0) continue;
          if (cell.leaf() || separated(target, cell.box, cell.moments.centre, opening_of(cell))) {
            let_next_frontier.push_back(c);
          } else {
            opened = true;
            for (std::uint32_t k = 0; k < cell.child_count; ++k) let_next_frontier.push_back(cell.first_child + k);
          }
        }
        let_frontier.swap(let_next_frontier);
        if (!opened) break;
      }
      for (std::uint32_t c : let_frontier) let_tasks.push_back({message, c, 0});
    }
    // Walk the tasks in parallel, each into its thread's buffer (kept across
    // calls: it grows only while a call needs more than any before), then
    // copy them into send_refs in task order: the LETs do not depend on the
    // threads or the schedule.
    const auto thread_count = static_cast<std::size_t>(team);
    let_thread_refs.resize(thread_count);
    let_thread_stacks.resize(thread_count);
    let_outputs.resize(let_tasks.size());
    const auto task_count = static_cast<std::ptrdiff_t>(let_tasks.size());
#pragma omp parallel num_threads(team)
    {
      const auto thread = static_cast<std::size_t>(omp_get_thread_num());
      std::vector<LetRef>& refs = let_thread_refs[thread];
      std::vector<std::uint32_t>& stack = let_thread_stacks[thread];
      refs.clear();
#pragma omp for schedule(dynamic, 1)
      for (std::ptrdiff_t t = 0; t < task_count; ++t) {
        const LetTask task = let_tasks[static_cast<std::size_t>(t)];
        const std::size_t offset = refs.size();
        if (task.stand_in) {
          refs.push_back({0, 1});
        } else {
          // Walk the subtree against the receiver's particle box: any group
          // of the receiver lies in that box, so a cell accepted here would
          // be accepted by every one of its groups.
          const Box& target = summaries[static_cast<std::size_t>(send_ranks[task.message])].bounds;
          stack.assign(1, task.cell);
          while (!stack.empty()) {
            const std::uint32_t c = stack.back();
            stack.pop_back();
            const TreeCell& cell = local.cells()[c];
            if (cell.count() == 0) continue;
            if (separated(target, cell.box, cell.moments.centre, opening_of(cell))) {
              refs.push_back({c, 1});
            } else if (cell.leaf()) {
              for (std::uint32_t k = cell.begin; k < cell.end; ++k) refs.push_back({k, 0});
            } else {
              for (std::uint32_t k = cell.child_count; k-- > 0;) stack.push_back(cell.first_child + k);
            }
          }
        }
        let_outputs[static_cast<std::size_t>(t)] = {static_cast<std::uint32_t>(thread), offset, refs.size() - offset};
      }
    }
    let_task_offsets.resize(let_tasks.size() + 1);
    let_task_offsets[0] = 0;
    send_offsets.assign(send_ranks.size() + 1, 0);
    for (std::size_t t = 0; t < let_tasks.size(); ++t) {
      let_task_offsets[t + 1] = let_task_offsets[t] + let_outputs[t].count;
      send_offsets[let_tasks[t].message + 1] = let_task_offsets[t + 1];
    }
    for (std::size_t m = 1; m < send_offsets.size(); ++m)
      send_offsets[m] = std::max(send_offsets[m], send_offsets[m - 1]);  // a receiver without tasks
    send_refs.resize(let_task_offsets.back());
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::ptrdiff_t t = 0; t < task_count; ++t) {
      const LetOutput& output = let_outputs[static_cast<std::size_t>(t)];
      const LetRef* from = let_thread_refs[output.thread].data() + output.offset;
      std::copy(from, from + output.count, send_refs.data() + let_task_offsets[static_cast<std::size_t>(t)]);
    }
  }
  send_items.resize(send_refs.size());
  const std::size_t item_count = send_refs.size();
#pragma omp parallel for num_threads(team) schedule(static)
  for (std::size_t k = 0; k < item_count; ++k) {
    const LetRef ref = send_refs[k];
    LetItem item{};
    if (ref.is_cell) {
      item.moments = local.cells()[ref.index].moments;
      item.pseudo = 1;
      item.extent = local.cells()[ref.index].bmax;
    } else {
      item.moments.mass = masses[ref.index];
      item.moments.centre = positions[ref.index];
      if (!velocities.empty())
        for (int a = 0; a < 3; ++a) item.moments.quadrupole[static_cast<std::size_t>(a)] = velocities[ref.index][a];
    }
    item.key = morton_key_unchecked(item.moments.centre, options.root);
    send_items[k] = item;
  }
}

void TreeForce::State::exchange_let(bool build) {
  const int me = comm.rank(), size = comm.size();
  const std::size_t old_total = received.size();
  recv_ranks.clear();
  recv_offsets.assign(1, 0);
  received.clear();
  stats.let_messages_sent = send_ranks.size() - static_cast<std::size_t>(std::count(send_ranks.begin(), send_ranks.end(), me));
  stats.let_items_sent = send_items.size();
  constexpr std::size_t item_bytes = sizeof(LetItem);
  auto checked_int = [](std::size_t items, const char* what) {
    if (items * item_bytes > static_cast<std::size_t>(INT_MAX))
      fail("TreeForce::compute", std::string(what) + " of " + std::to_string(items * item_bytes) +
                                     " bytes: more than INT_MAX in one LET exchange");
    return static_cast<int>(items * item_bytes);
  };
  if (options.let == LetMode::alltoallv) {
    std::vector<int> send_counts(static_cast<std::size_t>(size), 0), recv_counts(static_cast<std::size_t>(size), 0);
    for (std::size_t m = 0; m < send_ranks.size(); ++m)
      send_counts[static_cast<std::size_t>(send_ranks[m])] = checked_int(send_offsets[m + 1] - send_offsets[m], "a LET");
    check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm.get()), "MPI_Alltoall");
    std::vector<int> send_displs(static_cast<std::size_t>(size), 0), recv_displs(static_cast<std::size_t>(size), 0);
    std::size_t send_total = 0, recv_total = 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(size); ++r) {
      send_displs[r] = checked_int(send_total / item_bytes, "the LETs sent");
      recv_displs[r] = checked_int(recv_total / item_bytes, "the LETs received");
      send_total += static_cast<std::size_t>(send_counts[r]);
      recv_total += static_cast<std::size_t>(recv_counts[r]);
    }
    received.resize(recv_total / item_bytes);
    check_mpi(MPI_Alltoallv(send_items.data(), send_counts.data(), send_displs.data(), MPI_BYTE, received.data(),
                            recv_counts.data(), recv_displs.data(), MPI_BYTE, comm.get()),
              "MPI_Alltoallv");
    for (int r = 0; r < size; ++r)
      if (recv_counts[static_cast<std::size_t>(r)] > 0) {
        recv_ranks.push_back(r);
        recv_offsets.push_back(recv_offsets.back() + static_cast<std::size_t>(recv_counts[static_cast<std::size_t>(r)]) / item_bytes);
      }
  } else if (options.let == LetMode::sparse) {
    Outbox<LetItem> outbox(send_ranks, send_offsets, send_items);
    Inbox<LetItem> inbox = exchange(comm, outbox, {.algorithm = options.sparse_algorithm});
    for (auto [source, items] : inbox) {
      recv_ranks.push_back(source);
      received.insert(received.end(), items.begin(), items.end());
      recv_offsets.push_back(received.size());
    }
  } else {
    // Point to point: every rank computes who sends to it from the summaries,
    // so receives are posted for known sources; sizes come from MPI_Mprobe.
    const int tag = comm.next_tag();
    std::vector<MPI_Request> requests(send_ranks.size(), MPI_REQUEST_NULL);
    for (std::size_t m = 0; m < send_ranks.size(); ++m)
      check_mpi(MPI_Isend(send_items.data() + send_offsets[m], checked_int(send_offsets[m + 1] - send_offsets[m], "a LET"),
                          MPI_BYTE, send_ranks[m], tag, comm.get(), &requests[m]),
                "MPI_Isend");
    if (build) {
      expected_sources.clear();
      for (int r = 0; r < size; ++r)
        if (sends_let(r, me)) expected_sources.push_back(r);
    }
    for (int r : expected_sources) {
      MPI_Message message;
      MPI_Status status;
      check_mpi(MPI_Mprobe(r, tag, comm.get(), &message, &status), "MPI_Mprobe");
      int bytes = 0;
      check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
      const std::size_t first = received.size();
      received.resize(first + static_cast<std::size_t>(bytes) / item_bytes);
      check_mpi(MPI_Mrecv(received.data() + first, bytes, MPI_BYTE, &message, MPI_STATUS_IGNORE), "MPI_Mrecv");
      recv_ranks.push_back(r);
      recv_offsets.push_back(received.size());
    }
    check_mpi(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  stats.let_messages_received = recv_ranks.size();
  stats.let_items_received = received.size();
  if (!build && received.size() != old_total)
    fail("TreeForce::compute", "a re-use call received " + std::to_string(received.size()) + " LET items, the build " +
                                   std::to_string(old_total));
}

void TreeForce::State::build_global_tree(bool build, bool near_sources) {
  const int me = comm.rank();
  if (build) {
    // Remote sources in (key, rank, position in its LET) order: a total order
    // that depends only on the LETs' content, not on how they travelled.
    struct Entry {
      MortonKey key;
      std::uint32_t rank, seq;
      SourceOrigin origin;
    };
    auto before = [](const Entry& a, const Entry& b) {
      return a.key != b.key ? a.key < b.key : a.rank != b.rank ? a.rank < b.rank : a.seq < b.seq;
    };
    std::vector<Entry> remote;
    remote.reserve(received.size() + summaries.size());
    std::size_t message = 0;
    for (int r = 0; r < comm.size(); ++r) {
      if (message < recv_ranks.size() && recv_ranks[message] == r) {
        for (std::size_t k = recv_offsets[message]; k < recv_offsets[message + 1]; ++k)
          remote.push_back({received[k].key, static_cast<std::uint32_t>(r),
                            static_cast<std::uint32_t>(k - recv_offsets[message]),
                            {SourceOrigin::received, static_cast<std::uint32_t>(k)}});
        ++message;
      } else if (root_stands_in(r, me)) {
        // The allgathered root moment stands in for a LET that was not sent.
        remote.push_back({morton_key_unchecked(summaries[static_cast<std::size_t>(r)].root.centre, options.root),
                          static_cast<std::uint32_t>(r), 0, {SourceOrigin::stand_in, static_cast<std::uint32_t>(r)}});
      }
    }
    std::sort(remote.begin(), remote.end(), before);
    const std::size_t n = keys.size(), total = n + remote.size();
    source_origin.resize(total);
    source_keys.resize(total);
    // The merge of the local and remote sources, in parallel: each remote
    // entry goes after the local ones that come before it (a binary search:
    // the local ones are in this order too), each local one after the
    // remote ones placed before it. (Merged on one thread, this function
    // took 4.8 ms instead of 3.7 a build at 1e6 particles, np 1, 2 threads,
    // Xeon.)
    const auto local_before = [&](std::size_t i, const Entry& e) {
      return before({keys[i], static_cast<std::uint32_t>(me), static_cast<std::uint32_t>(i), {}}, e);
    };
    remote_places.resize(remote.size());
#pragma omp parallel num_threads(team)
    {
#pragma omp for schedule(static)
      for (std::size_t j = 0; j < remote.size(); ++j) {
        std::size_t lo = 0, hi = n;  // the first local source not before remote[j]
        while (lo < hi) {
          const std::size_t mid = lo + (hi - lo) / 2;
          if (local_before(mid, remote[j]))
            lo = mid + 1;
          else
            hi = mid;
        }
        remote_places[j] = lo + j;
        source_keys[lo + j] = remote[j].key;
        source_origin[lo + j] = remote[j].origin;
      }
      // j counts the remote entries before local source i: those placed at
      // most i plus their own count.
      const auto share = tree_detail::thread_share(0, n);
      std::size_t j = 0;
      for (std::size_t i = share.first; i < share.last; ++i) {
        while (j < remote.size() && remote_places[j] <= i + j) ++j;
        source_keys[i + j] = keys[i];
        source_origin[i + j] = {SourceOrigin::local, static_cast<std::uint32_t>(i)};
      }
    }
  }
  const std::size_t total = source_origin.size();
  // Nothing from other ranks: the sources are the local particles, in the
  // same order (the merge above took them one by one), and the local tree
  // is the global one. Only the arrays that are not the local ones are
  // written. (Copying them all took 12 ms a step at 1e6 particles, np 1, Xeon.)
  global_is_local = total == positions.size();
  const bool with_velocities = !velocities.empty();
  source_velocities.assign(with_velocities ? total : 0, Point{0, 0, 0});
  // The positions as three arrays only for a near kernel (NearSources).
  source_x.resize(near_sources ? total : 0);
  source_y.resize(near_sources ? total : 0);
  source_z.resize(near_sources ? total : 0);
  source_xyzm.resize(4 * (total + tree_detail::list_slack()));
  if (global_is_local) {
    source_pseudo.assign(total, 0);
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::size_t k = 0; k < total; ++k) {
      const Point& at = positions[k];
      for (int a = 0; a < 3; ++a) source_xyzm[4 * k + a] = at[a];
      source_xyzm[4 * k + 3] = masses[k];
      if (with_velocities) source_velocities[k] = velocities[k];
      if (near_sources) source_x[k] = at[0], source_y[k] = at[1], source_z[k] = at[2];
    }
    sources_at = positions;
    sources_mass = masses;
  } else {
    source_positions.resize(total);
    source_masses.resize(total);
    source_pseudo.resize(total);
    source_extents.resize(total);
    if (options.quadrupole) source_quadrupoles.assign(total, Quadrupole{});
    // One pass writes every array (they are read back in the walk, the
    // kernel and the global tree's moments).
#pragma omp parallel for num_threads(team) schedule(static)
    for (std::size_t k = 0; k < total; ++k) {
      const SourceOrigin origin = source_origin[k];
      Point at;
      double mass, extent = 0;
      std::uint8_t pseudo = 0;
      if (origin.kind == SourceOrigin::local) {
        at = positions[origin.index];
        mass = masses[origin.index];
        if (with_velocities) source_velocities[k] = velocities[origin.index];
      } else {
        const Moments& m = origin.kind == SourceOrigin::received ? received[origin.index].moments
                                                                   : summaries[origin.index].root;
        at = m.centre;
        mass = m.mass;
        pseudo = origin.kind == SourceOrigin::stand_in || received[origin.index].pseudo ? 1 : 0;
        if (pseudo) {
          if (options.quadrupole) source_quadrupoles[k] = m.quadrupole;
          extent = origin.kind == SourceOrigin::stand_in ? summaries[origin.index].bmax : received[origin.index].extent;
        } else if (with_velocities) {
          source_velocities[k] = {m.quadrupole[0], m.quadrupole[1], m.quadrupole[2]};
        }
      }
      source_positions[k] = at;
      source_masses[k] = mass;
      source_pseudo[k] = pseudo;
      source_extents[k] = extent;
      for (int a = 0; a < 3; ++a) source_xyzm[4 * k + a] = at[a];
      source_xyzm[4 * k + 3] = mass;
      if (near_sources) source_x[k] = at[0], source_y[k] = at[1], source_z[k] = at[2];
    }
    sources_at = source_positions;
    sources_mass = source_masses;
    if (build) global.build(source_keys, options.root, options.leaf_limit, team);
    global.compute_moments(source_positions, source_masses, source_quadrupoles, source_extents, options.quadrupole,
                           team);
  }
  const auto& cells = source_tree().cells();
  walk_nodes.resize(cells.size());
  walk_blocks.resize(cells.size());
  const std::size_t cell_count = cells.size();
  // Block 0 holds the root; each cell with children gets the next block.
  const std::uint32_t blocks = number_parents(cells, walk_blocks, team);
  if (blocks > WalkNode::block_mask)
    fail("TreeForce::compute", std::to_string(blocks - 1) + " cells with children on this rank; the walk numbers at most " +
                                   std::to_string(WalkNode::block_mask - 1));
  constexpr std::size_t rows = tree_detail::WalkGeometry::rows;
  const std::size_t width = tree_detail::walk_block_width(), block_size = rows * width;
  constexpr std::size_t line = 64 / sizeof(double);
  walk_geometry.resize(blocks * block_size + line);
  const std::size_t misaligned = (reinterpret_cast<std::uintptr_t>(walk_geometry.data()) / sizeof(double)) % line;
  double* block_storage = walk_geometry.data() + (misaligned == 0 ? 0 : line - misaligned);
  geometry.blocks = block_storage;
  geometry.width = width;
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  // Cell c's geometry into column k of a block; columns past the last
  // sibling (c = none) are zero (their bits are cleared).
  const auto put = [&](std::uint32_t c, std::uint32_t block, std::size_t k) {
    using G = tree_detail::WalkGeometry;
    double* row = block_storage + block * block_size + k;
    if (c == none) {
      for (std::size_t r = 0; r < rows; ++r) row[r * width] = 0;
      return;
    }
    const TreeCell& cell = cells[c];
    const Point& centre = cell.moments.centre;
    row[G::cx * width] = centre[0], row[G::cy * width] = centre[1], row[G::cz * width] = centre[2];
    row[G::mass * width] = cell.moments.mass;
    // The box rounded outwards to fp32 and (opening / theta)^2 upwards: the
    // walk never takes a cell whole where the exact fp64 test would open it.
    // far2 is infinite or NaN for theta 0 (every cell opened).
    row[G::lo_x * width] = round_down(cell.box.lo[0]), row[G::lo_y * width] = round_down(cell.box.lo[1]),
    row[G::lo_z * width] = round_down(cell.box.lo[2]);
    row[G::hi_x * width] = round_up(cell.box.hi[0]), row[G::hi_y * width] = round_up(cell.box.hi[1]),
    row[G::hi_z * width] = round_up(cell.box.hi[2]);
    // (An empty cell, which the octree never makes, would never be far.)
    const double opening = opening_of(cell);
    row[G::far2 * width] = cell.end == cell.begin ? std::numeric_limits<double>::infinity()
                                                  : round_up(opening * opening / theta2());
  };
  cell_xyzm.resize(4 * cells.size());
  cell_quadrupoles.resize(options.quadrupole ? cells.size() : 0);
  const double unit = quadrupole_unit(), unit_2 = 1 / (unit * unit);
  // Cell c's own records (walk node, list record, scaled quadrupole) and
  // its column k of `block`, from one read of the cell.
  const auto place = [&](std::uint32_t c, std::uint32_t block, std::size_t k) {
    const TreeCell& cell = cells[c];
    put(c, block, k);
    const Point& centre = cell.moments.centre;
    for (int a = 0; a < 3; ++a) cell_xyzm[4 * c + a] = centre[a];
    cell_xyzm[4 * c + 3] = cell.moments.mass;
    if (options.quadrupole) cell_quadrupoles[c] = scaled_quadrupole(cell.moments.quadrupole, unit_2);
    WalkNode& node = walk_nodes[c];
    node.begin = cell.begin;
    node.end = cell.end;
    node.first_child = cell.first_child;
    bool pseudo = false;
    if (cell.leaf())
      for (std::uint32_t i = cell.begin; i < cell.end; ++i) pseudo |= source_pseudo[i] != 0;
    node.packed = walk_blocks[c] | (std::uint32_t{cell.child_count} << WalkNode::block_bits) |
                  (std::uint32_t{pseudo} << 31);
  };
  if (cell_count > 0) {
    place(0, 0, 0);
    for (std::size_t k = 1; k < width; ++k) put(none, 0, k);
  }
  // Each cell is placed by its parent, with its siblings: the children of a
  // cell are contiguous, so the cells are read once, in order. (Placing each
  // cell in its own iteration read every cell twice, as itself and as a
  // child: link 61 -> 59 ms at 1e6, np 1, Xeon.) Most cells with children
  // are in the upper levels, which are stored first, so the loop is dealt out
  // in small chunks: with equal shares, one thread placed nearly all the
  // cells (13 ms at 1e6 on 1 thread and on 2).
#pragma omp parallel for num_threads(team) schedule(dynamic, 256)
  for (std::size_t c = 0; c < cell_count; ++c) {
    const TreeCell& cell = cells[c];
    if (cell.child_count == 0) continue;
    for (std::size_t k = 0; k < width; ++k)
      if (k < cell.child_count)
        place(cell.first_child + static_cast<std::uint32_t>(k), walk_blocks[c], k);
      else
        put(none, walk_blocks[c], k);
  }
}

void TreeForce::State::walk(const Box& targets, ThreadBuffers& b, const Point* origin) const {
  b.epj.clear();
  b.spj.clear();
  b.epj_count = 0;
  b.packed = origin != nullptr;
  using G = tree_detail::WalkGeometry;
  const std::size_t width = geometry.width;
  const Point at = origin ? *origin : Point{0, 0, 0};
  // The list's arrays grow ahead of b.spj (their first spj.size() slots are
  // valid), doubling, so that a cell is four stores, not four pushes.
  const auto room = [&](std::size_t more) {
    if (b.sx.size() < b.spj.size() + more)
      for (auto* v : {&b.sx, &b.sy, &b.sz, &b.sm}) v->resize(2 * (b.spj.size() + more));
  };
  const auto pack = [&](double x, double y, double z, double m) {
    const std::size_t slot = b.spj.size() - 1;
    b.sx[slot] = static_cast<float>(x - at[0]), b.sy[slot] = static_cast<float>(y - at[1]);
    b.sz[slot] = static_cast<float>(z - at[2]), b.sm[slot] = static_cast<float>(m);
  };
  // Cell c, column k of `block`.
  const auto take_cell = [&](std::uint32_t c, const double* block, std::size_t k) {
    if (b.packed) room(1);
    b.spj.push_back(c);
    if (b.packed)
      pack(block[G::cx * width + k], block[G::cy * width + k], block[G::cz * width + k], block[G::mass * width + k]);
  };
  const auto add_range = [&b](std::uint32_t begin, std::uint32_t end) {
    b.epj_count += end - begin;
    if (!b.epj.empty() && b.epj.back() == begin)
      b.epj.back() = end;
    else
      b.epj.push_back(begin), b.epj.push_back(end);
  };
  const WalkNode* nodes = walk_nodes.data();
  const double search_2 = search2();
  const double target[6] = {targets.lo[0], targets.lo[1], targets.lo[2], targets.hi[0], targets.hi[1], targets.hi[2]};
  const auto take_leaf = [&](const WalkNode& node) {
    if (!node.has_pseudo()) {
      add_range(node.begin, node.end);
      return;
    }
    if (b.packed) room(node.end - node.begin);
    for (std::uint32_t k = node.begin; k < node.end; ++k) {
      if (source_pseudo[k]) {
        b.spj.push_back(k | pseudo_flag);
        if (b.packed) pack(sources_at[k][0], sources_at[k][1], sources_at[k][2], sources_mass[k]);
      } else {
        add_range(k, k + 1);
      }
    }
  };
  // The root, then the children of each opened cell together: far ones to
  // the cell list, leaves to the particle list, in child order; the others
  // are opened next, the first child first.
  b.stack.clear();
  if (nodes[0].end == nodes[0].begin) return;
  if (tree_detail::far_cells(geometry.block(0), width, 1, target, search_2))
    take_cell(0, geometry.block(0), 0);
  else if (nodes[0].child_count() == 0)
    take_leaf(nodes[0]);
  else
    b.stack.push_back(0);
  // The far children of an opened cell go to the cell list in one step
  // (compressed stores of their indices and packed centres); the loop
  // below visits the others only. (A branch per child, far or not: traverse
  // 144 ms a step at 1e6 uniform, np 1, Xeon; 104 ms this way.)
  tree_detail::FarCellList far_list;
  far_list.origin = at.data();
  while (!b.stack.empty()) {
    const WalkNode& node = nodes[b.stack.back()];
    b.stack.pop_back();
    const double* block = geometry.block(node.block());
    const std::uint32_t child_count = node.child_count();
    // far_cells writes whole vectors: room for a block past the lists' ends.
    const std::size_t listed = b.spj.size();
    b.spj.resize(listed + width);
    far_list.index = b.spj.data();
    if (b.packed) {
      room(width);
      far_list.x = b.sx.data(), far_list.y = b.sy.data(), far_list.z = b.sz.data(), far_list.mass = b.sm.data();
    }
    far_list.first_index = node.first_child;
    far_list.count = listed;
    const std::uint64_t far = tree_detail::far_cells(block, width, child_count, target, search_2, &far_list);
    b.spj.resize(far_list.count);
    std::uint32_t opened[8];
    std::size_t opened_count = 0;
    for (std::uint64_t near = ~far & ((std::uint64_t{1} << child_count) - 1); near != 0; near &= near - 1) {
      const auto c = node.first_child + static_cast<std::uint32_t>(std::countr_zero(near));
      const WalkNode& child = nodes[c];
      if (child.end == child.begin) continue;
      if (child.child_count() == 0)
        take_leaf(child);
      else
        opened[opened_count++] = c;
    }
    while (opened_count > 0) b.stack.push_back(opened[--opened_count]);
  }
}

void TreeForce::State::evaluate(std::uint32_t group, ThreadBuffers& b, const UserKernel* user,
                                const NearKernel* near) {
  const std::size_t begin = groups[group][0], count = groups[group][1] - groups[group][0];
  const auto spj_moments_of = [&](std::uint32_t entry) {
    if (entry & pseudo_flag) {
      const std::uint32_t k = entry & ~pseudo_flag;
      return Moments{sources_mass[k], sources_at[k],
                     options.quadrupole ? source_quadrupoles[k] : Quadrupole{}};
    }
    return source_tree().cells()[entry].moments;
  };
  std::span<Point> acc(sorted_acc.data() + begin, count);
  const TargetGroup target_group{
      std::span<const Point>(positions.data() + begin, count), std::span<const double>(masses.data() + begin, count),
      std::span<const std::size_t>(perm.data() + begin, count),
      velocities.empty() ? std::span<const Point>() : std::span<const Point>(velocities.data() + begin, count), acc};
  b.epj_interactions += count * b.epj_count;
  b.spj_interactions += count * b.spj.size();
  if (user) {
    b.user_epj.clear();
    for (std::size_t r = 0; r < b.epj.size(); r += 2)
      for (std::uint32_t k = b.epj[r]; k < b.epj[r + 1]; ++k)
        b.user_epj.push_back({sources_at[k], sources_mass[k],
                              source_velocities.empty() ? Point{0, 0, 0} : source_velocities[k]});
    b.spj_moments.resize(b.spj.size());
    for (std::size_t j = 0; j < b.spj.size(); ++j) b.spj_moments[j] = spj_moments_of(b.spj[j]);
    for (Point& a : acc) a = {0, 0, 0};
    (*user)(target_group, b.user_epj, b.spj_moments);
    return;
  }
  // fp32 relative to the centre of the group's box.
  const Point origin = centre_of(group_boxes[group]);
  for (auto* v : {&b.tx, &b.ty, &b.tz, &b.ax, &b.ay, &b.az}) v->assign(count, 0.0f);
  for (std::size_t i = 0; i < count; ++i) {
    const Point& p = positions[begin + i];
    b.tx[i] = static_cast<float>(p[0] - origin[0]);
    b.ty[i] = static_cast<float>(p[1] - origin[1]);
    b.tz[i] = static_cast<float>(p[2] - origin[2]);
  }
  const std::size_t cells = b.spj.size(), sources = b.epj_count + cells;
  const std::size_t slack = tree_detail::list_slack();
  for (auto* v : {&b.sx, &b.sy, &b.sz, &b.sm}) v->resize(sources + slack);  // (the cells' slots stay)
  auto put = [&](std::size_t j, const Point& p, double m) {
    b.sx[j] = static_cast<float>(p[0] - origin[0]);
    b.sy[j] = static_cast<float>(p[1] - origin[1]);
    b.sz[j] = static_cast<float>(p[2] - origin[2]);
    b.sm[j] = static_cast<float>(m);
  };
  const tree_detail::ListFp32 list{b.sx.data(), b.sy.data(), b.sz.data(), b.sm.data()};
  tree_detail::gather_particle_runs(source_xyzm.data(), b.epj.data(), b.epj.size() / 2, origin.data(),
                                    {list.x + cells, list.y + cells, list.z + cells, list.mass + cells});
  // Unless the walk packed them: cells, runs of them at a time; LET
  // pseudo-particles (flagged) one by one.
  for (std::size_t j = 0; !b.packed && j < cells;) {
    std::size_t end = j;
    while (end < cells && !(b.spj[end] & pseudo_flag)) ++end;
    tree_detail::gather_records(cell_xyzm.data(), 4, b.spj.data() + j, end - j, origin.data(),
                                {list.x + j, list.y + j, list.z + j, list.mass + j});
    if (end < cells) {
      const std::uint32_t k = b.spj[end] & ~pseudo_flag;
      put(end, sources_at[k], sources_mass[k]);
      ++end;
    }
    j = end;
  }
  const float eps2 = static_cast<float>(options.softening * options.softening);
  // With quadrupoles the cells' monopole terms come with their quadrupole
  // terms (quadrupole_term): the monopole kernel takes the particles only.
  const std::size_t first_monopole = options.quadrupole ? cells : 0, monopoles = sources - first_monopole;
  const auto list_of = [&](const std::vector<float>& v) {
    return std::span<const float>(v).subspan(first_monopole, monopoles);
  };
  for (Point& a : acc) a = {0, 0, 0};
  const KernelTargets targets{b.tx, b.ty, b.tz, b.ax, b.ay, b.az};
  if (!options.fp64_accumulation) {
    gravity_kernel(targets, {list_of(b.sx), list_of(b.sy), list_of(b.sz), list_of(b.sm)}, eps2);
    for (std::size_t i = 0; i < count; ++i) acc[i] = {b.ax[i], b.ay[i], b.az[i]};
  } else {
    for (std::size_t first = 0; first < monopoles; first += fp64_block) {
      const std::size_t length = std::min(fp64_block, monopoles - first);
      for (auto* v : {&b.ax, &b.ay, &b.az}) std::fill(v->begin(), v->end(), 0.0f);
      gravity_kernel(targets,
                     {list_of(b.sx).subspan(first, length), list_of(b.sy).subspan(first, length),
                      list_of(b.sz).subspan(first, length), list_of(b.sm).subspan(first, length)},
                     eps2);
      for (std::size_t i = 0; i < count; ++i) {
        acc[i][0] += b.ax[i];
        acc[i][1] += b.ay[i];
        acc[i][2] += b.az[i];
      }
    }
  }
  if (options.quadrupole) quadrupole_term(b, acc);
  if (near)
    (*near)(target_group, NearSources{source_x, source_y, source_z, sources_mass, source_velocities, b.epj});
}

void TreeForce::State::quadrupole_term(ThreadBuffers& b, std::span<Point> acc) const {
  // Lengths in a power of two near the root's size (exact scalings), so that
  // 1/s^5 stays within fp32's range whatever the problem's unit.
  const double unit = quadrupole_unit(), inverse = 1 / unit, inverse2 = inverse * inverse;
  const auto finv = static_cast<float>(inverse);
  const std::size_t m = b.spj.size(), n = acc.size();
  b.quad_cells.resize(11 * m);
  float* rows = b.quad_cells.data();
  for (std::size_t j = 0; j < m; ++j) {
    // The centre and mass from the kernel's list (relative to the group's
    // origin already), the moments from the cell's or pseudo-particle's own.
    rows[j] = b.sx[j] * finv, rows[m + j] = b.sy[j] * finv, rows[2 * m + j] = b.sz[j] * finv;
    const std::uint32_t entry = b.spj[j];
    const std::uint32_t k = entry & ~pseudo_flag;
    const std::array<float, 8> q = entry != k ? scaled_quadrupole(source_quadrupoles[k], inverse2) : cell_quadrupoles[k];
    for (std::size_t c = 0; c < 7; ++c) rows[(3 + c) * m + j] = q[c];
    rows[10 * m + j] = 4 * b.sm[j];
  }
  for (auto* v : {&b.qx, &b.qy, &b.qz}) v->resize(n);
  for (std::size_t i = 0; i < n; ++i) b.qx[i] = b.tx[i] * finv, b.qy[i] = b.ty[i] * finv, b.qz[i] = b.tz[i] * finv;
  const auto eps2 = static_cast<float>(options.softening * options.softening * inverse2);
  // One fp32 sum over the cells, or (fp64_accumulation) one per block of
  // fp64_block cells, each added in fp64.
  const std::size_t block = options.fp64_accumulation ? fp64_block : std::max<std::size_t>(m, 1);
  for (std::size_t first = 0; first < m; first += block) {
    for (auto* v : {&b.qax, &b.qay, &b.qaz}) v->assign(n, 0.0f);
    tree_detail::quadrupole_fp32(b.qx.data(), b.qy.data(), b.qz.data(), b.qax.data(), b.qay.data(), b.qaz.data(), n,
                                 rows + first, m, std::min(block, m - first), eps2);
    for (std::size_t i = 0; i < n; ++i) {
      acc[i][0] += static_cast<double>(b.qax[i]) * inverse2;
      acc[i][1] += static_cast<double>(b.qay[i]) * inverse2;
      acc[i][2] += static_cast<double>(b.qaz[i]) * inverse2;
    }
  }
}

double TreeForce::State::quadrupole_unit() const {
  double extent = 0;
  for (int a = 0; a < 3; ++a) extent = std::max(extent, options.root.hi[a] - options.root.lo[a]);
  return extent > 0 && std::isfinite(extent) ? std::exp2(std::ceil(std::log2(extent))) : 1.0;
}

void TreeForce::State::forces(const UserKernel* user, const NearKernel* near, bool build, Profile& profile) {
  if (buffers.size() != static_cast<std::size_t>(threads)) buffers.resize(static_cast<std::size_t>(threads));
  for (ThreadBuffers& b : buffers) b.walk_s = b.kernel_s = 0, b.epj_interactions = b.spj_interactions = 0;
  sorted_acc.resize(positions.size());
  const bool keep_lists = options.reuse > 1;
  if (keep_lists && build) {
    list_epj.assign(groups.size(), {});
    list_spj.assign(groups.size(), {});
  }
  const double start = MPI_Wtime();
  simulated::Work work(build ? "tree: walk and kernel" : "tree: kernel, lists re-used");
  const auto group_count = static_cast<std::ptrdiff_t>(groups.size());
#pragma omp parallel num_threads(threads)
  {
    ThreadBuffers& b = buffers[static_cast<std::size_t>(omp_get_thread_num())];
#pragma omp for schedule(dynamic, 4)
    for (std::ptrdiff_t g = 0; g < group_count; ++g) {
      const auto group = static_cast<std::uint32_t>(g);
      const double t0 = omp_get_wtime();
      if (build) {
        const Point origin = centre_of(group_boxes[group]);  // the same as evaluate()'s
        walk(group_boxes[group], b, user ? nullptr : &origin);
        if (keep_lists) list_epj[group] = b.epj, list_spj[group] = b.spj;
      } else {
        b.epj = list_epj[group];
        b.spj = list_spj[group];
        b.packed = false;
        b.epj_count = 0;
        for (std::size_t r = 0; r < b.epj.size(); r += 2) b.epj_count += b.epj[r + 1] - b.epj[r];
      }
      const double t1 = omp_get_wtime();
      evaluate(group, b, user, near);
      b.walk_s += t1 - t0;
      b.kernel_s += omp_get_wtime() - t1;
    }
  }
  double walk_s = 0, kernel_s = 0;
  for (const ThreadBuffers& b : buffers) {
    walk_s += b.walk_s;
    kernel_s += b.kernel_s;
    stats.epj_interactions += b.epj_interactions;
    stats.spj_interactions += b.spj_interactions;
  }
  work.done(static_cast<double>(stats.epj_interactions + stats.spj_interactions));
  const double wall = MPI_Wtime() - start;
  // The parallel loop interleaves walk and kernel: its wall time is split in
  // the proportion of the threads' summed times.
  const double busy = walk_s + kernel_s;
  stats.traverse_s = busy > 0 ? wall * walk_s / busy : 0;
  stats.kernel_s = wall - stats.traverse_s;
  profile.add("traverse", stats.traverse_s);
  profile.add("kernel", stats.kernel_s);
}

// ---------------------------------------------------------------------------

TreeForce::TreeForce(Comm& comm, TreeOptions options) : state_(std::make_unique<State>(comm, options)) {
  const auto bad = [](const std::string& what) { fail("TreeForce", what); };
  if (!(options.theta >= 0)) bad("theta " + std::to_string(options.theta) + " < 0");
  if (options.leaf_limit < 1) bad("leaf_limit " + std::to_string(options.leaf_limit) + " < 1");
  if (options.group_limit < 1) bad("group_limit " + std::to_string(options.group_limit) + " < 1");
  if (options.reuse < 1) bad("reuse " + std::to_string(options.reuse) + " < 1");
  if (!(options.softening >= 0)) bad("softening " + std::to_string(options.softening) + " < 0");
  if (!(options.search_radius >= 0) || !std::isfinite(options.search_radius))
    bad("search_radius " + std::to_string(options.search_radius) + " not finite and >= 0");
  if (options.threads < 0) bad("threads " + std::to_string(options.threads) + " < 0");
  for (int a = 0; a < 3; ++a)
    if (!(options.root.hi[a] > options.root.lo[a])) bad("root box empty on axis " + std::to_string(a));
  if (!(options.target_error >= 0) || !std::isfinite(options.target_error))
    bad("target_error " + std::to_string(options.target_error) + " not finite and >= 0");
  if (options.target_error > 0) {
    const AccuracyChoice choice = choose_accuracy(options.target_error, options.error_measure);
    state_->options.theta = choice.theta;
    state_->options.opening = choice.opening;
    state_->options.quadrupole = choice.quadrupole;
    recalibrate();  // the first gravity compute() checks the choice
  }
  state_->threads = options.threads > 0 ? options.threads : automatic_threads(comm);
}

TreeForce::~TreeForce() = default;
TreeForce::TreeForce(TreeForce&&) noexcept = default;
TreeForce& TreeForce::operator=(TreeForce&&) noexcept = default;

const TreeStats& TreeForce::stats() const noexcept { return state_->stats; }
const TreeOptions& TreeForce::options() const noexcept { return state_->options; }
int TreeForce::threads() const noexcept { return state_->threads; }

void TreeForce::recalibrate() noexcept {
  state_->check_accuracy = state_->options.target_error > 0 && state_->options.check_samples > 0;
}

void TreeForce::compute(std::span<const Point> positions, std::span<const double> masses,
                        std::span<Point> accelerations, Profile& profile) {
  if (state_->check_accuracy)
    state_->compute_checked(positions, masses, accelerations, profile);
  else
    state_->compute(positions, masses, {}, accelerations, nullptr, nullptr, profile);
}

void TreeForce::compute(std::span<const Point> positions, std::span<const double> masses,
                        std::span<Point> accelerations, const UserKernel& kernel, Profile& profile) {
  state_->compute(positions, masses, {}, accelerations, kernel ? &kernel : nullptr, nullptr, profile);
}

void TreeForce::compute(std::span<const Point> positions, std::span<const double> masses,
                        std::span<const Point> velocities, std::span<Point> accelerations, const NearKernel& near,
                        Profile& profile) {
  state_->compute(positions, masses, velocities, accelerations, nullptr, near ? &near : nullptr, profile);
}

void TreeForce::compute(std::span<const Point> positions, std::span<const double> masses,
                        std::span<const Point> velocities, std::span<Point> accelerations, const UserKernel& kernel,
                        Profile& profile) {
  state_->compute(positions, masses, velocities, accelerations, kernel ? &kernel : nullptr, nullptr, profile);
}

// The caller's arrays are x, m, v and a here: positions, masses and
// velocities are the members (in Morton order).
void TreeForce::State::compute(std::span<const Point> x, std::span<const double> m, std::span<const Point> v,
                               std::span<Point> a, const UserKernel* user, const NearKernel* near, Profile& profile) {
  const bool build = calls % static_cast<std::uint64_t>(options.reuse) == 0;
  team = static_cast<int>(std::clamp<std::size_t>(x.size() / particles_per_thread, 1,
                                                  static_cast<std::size_t>(std::max(threads, 1))));
  {
    // Every rank agrees on validity before any data moves.
    auto timer = profile.phase("other");
    std::string problem;
    if (m.size() != x.size() || a.size() != x.size() || (!v.empty() && v.size() != x.size()))
      problem = "positions, masses, velocities and accelerations differ in length (" + std::to_string(x.size()) +
                ", " + std::to_string(m.size()) + ", " + std::to_string(v.size()) + ", " + std::to_string(a.size()) + ")";
    else if (x.size() >= std::numeric_limits<std::int32_t>::max())
      problem = std::to_string(x.size()) + " particles on one rank, more than 2^31 - 1";
    else if (!build && x.size() != positions.size())
      problem = "a call that re-uses the lists has " + std::to_string(x.size()) +
                " particles, the call that built them " + std::to_string(positions.size());
    else {
      std::size_t outside = x.size();  // the first particle outside the root box
#pragma omp parallel for num_threads(team) schedule(static) reduction(min : outside)
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!options.root.contains(x[i])) outside = std::min(outside, i);
      if (outside < x.size()) {
        const Point& p = x[outside];
        problem = "particle " + std::to_string(outside) + " at (" + std::to_string(p[0]) + ", " +
                  std::to_string(p[1]) + ", " + std::to_string(p[2]) + ") outside the root box";
      }
    }
    const int anywhere = comm.allreduce(problem.empty() ? 0 : 1, MPI_MAX);
    if (!problem.empty()) fail("TreeForce::compute", problem);
    if (anywhere) fail("TreeForce::compute", "invalid input on another rank");
  }
  const auto sync = [&] {
    if (!options.barrier_phases) return;
    auto timer = profile.phase("imbalance");
    comm.barrier();
  };
  stats = {};
  stats.lists_built = build;
  // A failure past this point leaves no half-built lists to re-use.
  if (build) calls = 0;
  try {
    sync();
    {
      auto timer = profile.phase("build tree");
      simulated::Work work(!build                                ? "tree: local update"
                           : options.sort == SortMethod::merge ? "tree: local build, merge sort"
                                                               : "tree: local build");
      build_local_tree(x, m, v, build);
      work.done(static_cast<double>(x.size()));
    }
    sync();
    {
      auto timer = profile.phase("build LET");
      simulated::Work work("tree: LET build");
      build_let(build);
      work.done(static_cast<double>(send_items.size()));
    }
    sync();
    {
      auto timer = profile.phase("exchange LET");
      exchange_let(build);
    }
    {
      auto timer = profile.phase("build tree");
      const double start = MPI_Wtime();
      // Without LET items the global tree is the local one (one rank).
      simulated::Work work(received.empty() ? "tree: global link, no LET" : "tree: global link");
      build_global_tree(build, near != nullptr);
      work.done(static_cast<double>(x.size() + received.size()));
      stats.link_s += MPI_Wtime() - start;
    }
    sync();
    forces(user, near, build, profile);
    {
      auto timer = profile.phase("other");
      simulated::Work work("tree: scatter");
      // perm is a permutation; the scattered stores' lines are fetched
      // fetch_ahead iterations early (17 -> 14 ms for "other" at 1e6 on one
      // thread, Xeon).
#pragma omp parallel for num_threads(team) schedule(static)
      for (std::size_t k = 0; k < perm.size(); ++k) {
        if (k + fetch_ahead < perm.size()) __builtin_prefetch(&a[perm[k + fetch_ahead]], 1);
        a[perm[k]] = sorted_acc[k];
      }
      work.done(static_cast<double>(perm.size()));
      stats.targets = x.size();
      stats.groups = groups.size();
    }
  } catch (...) {
    calls = 0;
    list_epj.clear();
    list_spj.clear();
    throw;
  }
  ++calls;
}

void TreeForce::State::compute_checked(std::span<const Point> x, std::span<const double> m, std::span<Point> a,
                                       Profile& profile) {
  const double target = options.target_error;
  // Below the target: room for the samples' scatter (the median of 512
  // samples is a ~5 % estimate of the input's) and for the prediction's. In
  // the tests (2e4 particles, np 1-3) and at 1e5, errors measured at 2000
  // other samples came to at most 0.81 of the target.
  const double accept = target / 1.25, goal = target / 1.4;
  const auto measure = [&](std::span<const Point> forces) {
    auto timer = profile.phase("accuracy check");
    return sampled_force_error(comm, x, m, forces, options.check_samples, options.softening, threads);
  };
  const auto rescaled = [&](double theta, double error) {
    return rescaled_theta(options.opening, options.quadrupole, options.error_measure, theta, error, goal);
  };
  // Every compute() below builds its lists (calls = 0): they are then those
  // of the angle it ran at.
  const auto compute_at = [&](double theta, std::span<Point> forces) {
    options.theta = theta;
    calls = 0;
    compute(x, m, {}, forces, nullptr, nullptr, profile);
  };
  // The next angle for the goal: the secant (log-log) through the last two
  // measurements, or the table's curve through the last one; never more
  // than a factor 2 from the last angle nor past the table's largest.
  struct Measured {
    double theta, error;
  };
  std::vector<Measured> tried;
  const auto next_angle = [&] {
    const Measured& last = tried.back();
    double next = rescaled(last.theta, last.error);
    if (tried.size() >= 2) {
      const Measured& before = tried[tried.size() - 2];
      const double slope = std::log(last.error / before.error) / std::log(last.theta / before.theta);
      if (slope > 0 && std::isfinite(slope)) next = std::exp(std::log(last.theta) + std::log(goal / last.error) / slope);
    }
    return std::clamp(next, 0.5 * last.theta, std::min(2 * last.theta, accuracy_calibration().back().theta));
  };
  double theta = options.theta;
  compute_at(theta, a);
  const SampledForceError first = measure(a);
  if (first.samples == 0) return;  // no particles anywhere: check at the next call
  double error = first.median_of(options.error_measure);
  tried.push_back({theta, error});
  if (error == 0) {
    // Nothing to measure against (forces exact at the samples): the table's angle.
  } else if (error <= accept) {
    // An input easier than the table's envelope: try the angle it allows,
    // then once more between it and the kept one if it missed.
    const TreeStats kept = stats;
    double too_wide = std::numeric_limits<double>::infinity();  // the smallest angle that missed
    std::vector<Point> trial;
    for (int tries = 0; tries < 2; ++tries) {
      const double wider = std::min(next_angle(), 0.98 * too_wide);
      if (!(wider > 1.02 * theta)) break;
      trial.resize(a.size());
      compute_at(wider, trial);
      const double trial_error = measure(trial).median_of(options.error_measure);
      tried.push_back({wider, trial_error});
      if (trial_error <= accept) {
        std::copy(trial.begin(), trial.end(), a.begin());
        theta = wider, error = trial_error;
        break;
      }
      too_wide = wider;
    }
    if (options.theta != theta) {  // the last trial missed
      if (options.reuse > 1) {
        compute_at(theta, a);  // the lists kept for re-use must be this angle's
      } else {
        options.theta = theta;  // reuse 1: every call builds its lists
        stats = kept;
      }
    }
  } else {
    // Harder than the table's inputs (or not finite): smaller angles, at
    // most three tries; kept once within the target.
    for (int tries = 0; tries < 3 && !(error <= accept); ++tries) {
      theta = std::isfinite(error) ? std::min(next_angle(), 0.9 * theta) : 0.5 * theta;
      compute_at(theta, a);
      error = measure(a).median_of(options.error_measure);
      tried.push_back({theta, error});
    }
    if (!(error <= target)) {
      stats.measured_error = error;
      fail("TreeForce::compute",
           "target error " + std::to_string(target) + " (" + std::string(to_string(options.error_measure)) +
               ") not reached on this input: median " + std::to_string(error) + " at theta " + std::to_string(theta) +
               ", the smallest angle tried (the accelerations are that angle's; the next call checks again from it)");
    }
  }
  stats.measured_error = error;
  check_accuracy = false;
}

}  // namespace domex
