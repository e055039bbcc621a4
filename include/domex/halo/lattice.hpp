// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// domex::LatticeGrid and domex::LatticeHalo: the QCD communication pattern.
// A 4-D lattice of sites block-distributed over a 4-D grid of ranks (1 to 4
// split axes), and the exchange of one ghost layer with the 8 face neighbours
// (2 per axis), all 8 directions started by one call and completed by one.
//
//   domex::LatticeGrid grid(comm, {16, 16, 16, 32});
//   domex::LatticeHalo halo(grid, {.site_bytes = sizeof(Spinor), .path = domex::LatticePath::datatype});
//   std::vector<Spinor> psi(halo.sites());       // owned sites, then the 8 ghost faces
//   halo.begin(psi);  /* interior sites */  halo.finish();  /* boundary sites */

#include <domex/comm/comm.hpp>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace domex {

/// Shape of the 4-D process grid.
struct LatticeOptions {
  /// Ranks per axis (x, y, z, t); 0 lets MPI_Dims_create choose. The product must be P.
  std::array<int, 4> dims{0, 0, 0, 0};
  /// Periodic boundary per axis (lattice QCD: all four).
  std::array<bool, 4> periodic{true, true, true, true};
};

/// The global lattice split into one block of sites per rank. Along an axis
/// of n sites over d ranks the first n % d ranks own n / d + 1 sites, the
/// others n / d.
class LatticeGrid {
 public:
  /// Collective over `comm`. Throws domex::Error on every rank if an axis has
  /// no sites, fewer sites than ranks, the dims do not multiply to P, or the
  /// ranks passed different arguments.
  LatticeGrid(const Comm& comm, std::array<std::size_t, 4> global_sites, LatticeOptions options = {});

  /// The Cartesian communicator (rank numbering identical to `comm`'s).
  [[nodiscard]] const Comm& comm() const noexcept { return comm_; }
  [[nodiscard]] std::array<int, 4> dims() const noexcept { return dims_; }
  [[nodiscard]] std::array<int, 4> coords() const noexcept { return coords_; }
  [[nodiscard]] std::array<bool, 4> periodic() const noexcept { return periodic_; }
  [[nodiscard]] std::array<std::size_t, 4> global_sites() const noexcept { return global_; }
  /// Sites owned by this rank per axis.
  [[nodiscard]] std::array<std::size_t, 4> local_sites() const noexcept { return local_; }
  /// Global coordinate of this rank's first owned site per axis.
  [[nodiscard]] std::array<std::size_t, 4> offset() const noexcept { return offset_; }
  [[nodiscard]] std::size_t volume() const noexcept { return local_[0] * local_[1] * local_[2] * local_[3]; }
  /// Rank of the face neighbour one step (+1 or -1) along `axis`, or
  /// MPI_PROC_NULL beyond a non-periodic boundary. May be this rank.
  [[nodiscard]] int neighbour(int axis, int step) const noexcept { return neighbour_[2 * axis + (step > 0 ? 1 : 0)]; }

 private:
  Comm comm_;
  std::array<int, 4> dims_{1, 1, 1, 1};
  std::array<int, 4> coords_{0, 0, 0, 0};
  std::array<bool, 4> periodic_{true, true, true, true};
  std::array<std::size_t, 4> global_{1, 1, 1, 1};
  std::array<std::size_t, 4> local_{1, 1, 1, 1};
  std::array<std::size_t, 4> offset_{0, 0, 0, 0};
  std::array<int, 8> neighbour_{};
};

/// How the 8 faces travel. All three give the same ghosts, bit for bit.
enum class LatticePath {
  /// Pack each face into one persistent send buffer per neighbour, receive
  /// into one persistent buffer per neighbour, copy into the ghost face.
  pack,
  /// No copy by domex: a committed MPI vector datatype per axis describes the
  /// face inside the field; persistent sends go straight from the field and
  /// persistent receives straight into its (contiguous) ghost faces.
  datatype,
  /// Like datatype, but a face that is contiguous in the field's own layout
  /// (the t faces: t is the slowest axis, so t = 0 and t = n_t - 1 are one
  /// block each; any face whose higher axes all have one site) is sent as
  /// plain contiguous bytes, with no datatype and no copy anywhere.
  contiguous,
};

/// "pack", "datatype", "contiguous".
[[nodiscard]] const char* to_string(LatticePath path) noexcept;
/// The path named `name`; throws domex::Error for any other name.
[[nodiscard]] LatticePath lattice_path_from_string(std::string_view name);

struct LatticeHaloOptions {
  /// Bytes per site of every field exchanged (a Wilson spinor: 12 complex doubles = 192).
  std::size_t site_bytes = 0;
  LatticePath path = LatticePath::pack;
};

/// One ghost layer on the 8 faces of a LatticeGrid, built once and reused:
/// datatypes committed once, persistent requests (per field address for the
/// no-copy paths, since a persistent request is bound to its buffer; the last
/// 8 field addresses are kept, an older one is set up again when it returns).
///
/// Field layout ("faces last"): sites() elements of site_bytes each. First the
/// volume() owned sites, x fastest: site (x, y, z, t) at
/// x + nx * (y + ny * (z + nz * t)); then the 8 ghost faces, each contiguous,
/// in the order (x-, x+, y-, y+, z-, z+, t-, t+); face (axis, side) holds the
/// sites at coordinate -1 (side 0) or n_axis (side 1) in the same order as the
/// owned sites with that axis left out. Every receive therefore lands in a
/// contiguous block; only the send side differs between the paths.
class LatticeHalo {
 public:
  /// Collective over the grid's communicator (duplicates it). `grid` must
  /// outlive the halo. Throws domex::Error on every rank if site_bytes is 0 or
  /// differs between ranks, or a face exceeds INT_MAX sites.
  explicit LatticeHalo(const LatticeGrid& grid, LatticeHaloOptions options);
  LatticeHalo(LatticeHalo&&) noexcept;
  LatticeHalo& operator=(LatticeHalo&&) noexcept;
  ~LatticeHalo();

  [[nodiscard]] const LatticeGrid& grid() const noexcept { return *grid_; }
  [[nodiscard]] const LatticeHaloOptions& options() const noexcept { return options_; }
  /// Owned sites plus the 8 ghost faces: the elements every field must have.
  [[nodiscard]] std::size_t sites() const noexcept { return sites_; }
  /// Index of the ghost site of face (axis, side) that has the owned site
  /// `site`'s coordinates on the other three axes.
  [[nodiscard]] std::size_t ghost_index(std::size_t site, int axis, int side) const noexcept;
  /// Index of the site one step (+1 / -1) along `axis` from owned site `site`:
  /// an owned site, or a ghost site on the boundary.
  [[nodiscard]] std::size_t neighbour_index(std::size_t site, int axis, int step) const noexcept;
  /// Sites of one face (axis): volume() / n_axis.
  [[nodiscard]] std::size_t face_sites(int axis) const noexcept { return face_sites_[static_cast<std::size_t>(axis)]; }

  /// Messages this rank sends per exchange (8, self-messages included,
  /// minus those to MPI_PROC_NULL) and their bytes.
  [[nodiscard]] std::size_t messages_per_exchange() const noexcept;
  [[nodiscard]] std::size_t bytes_per_exchange() const noexcept;

  /// begin() then finish().
  template <class Field>
  void exchange(Field& field) {
    begin(field);
    finish();
  }
  /// Starts all 8 directions (pack path: packs first). The field must stay
  /// alive, at the same address, and unmodified on its boundary sites until
  /// finish() returns. Invalid field on one rank (wrong size): that rank
  /// sends empty messages, drains its receives, and throws domex::Error here;
  /// each neighbour throws from finish() naming it (every rank concerned, no
  /// hang); the halo stays usable.
  template <class Field>
  void begin(Field& field) {
    using T = std::remove_pointer_t<decltype(std::data(field))>;
    static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>, "LatticeHalo: a mutable trivially copyable field");
    begin_bytes(reinterpret_cast<std::byte*>(std::data(field)), static_cast<std::size_t>(std::size(field)) * sizeof(T));
  }
  /// Waits for all 8 directions and (pack path) unpacks. Throws domex::Error
  /// naming the neighbour if a neighbour's begin() failed.
  void finish();

 private:
  void begin_bytes(std::byte* data, std::size_t bytes);
  struct State;
  const LatticeGrid* grid_;
  LatticeHaloOptions options_;
  std::size_t sites_ = 0;
  std::array<std::size_t, 4> face_sites_{};
  std::array<std::size_t, 8> ghost_offset_{};
  std::unique_ptr<State> state_;
};

}  // namespace domex
