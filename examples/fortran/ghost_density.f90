! SPDX-License-Identifier: BSD-3-Clause
! MPS particle number density (Koshizuka & Oka 1996) with domex's ghost
! particles (module `domex`): n_i = sum over j /= i with r_ij < r_e of
! w(r_ij), w(r) = r_e / r - 1, for particles in a periodic box split by a
! bucket decomposition (the MPS study's).
!
! The ghost plan is built once with the cutoff r_e + skin; for three steps the
! particles drift (less than half the skin in all) and only the ghost
! positions are refreshed (domex_ghost_update_positions: owners' positions plus
! the periodic shift), as between neighbour-list rebuilds; then the plan is
! rebuilt. Each step computes the density twice:
!   full pairs: every owned i against every owned or ghost j;
!   half pairs: each pair once (owned-owned i < j; owned-ghost on the rank
!     holding the smaller id), w added to both ends, the ghost ends summed
!     back into their owners with domex_ghost_reverse_sum;
! and compares both with a brute force over all particles of all ranks
! (minimum image). Prints "WRONG" and stops with 1 if any differs by more
! than 1e-12 relative.
!
!   scripts/run -n 4 build/release/examples/fortran/fortran_ghost_density
program ghost_density
  use, intrinsic :: iso_c_binding, only: c_double
  use mpi_f08
  use domex
  implicit none
  integer, parameter :: lattice = 12, buckets_per_axis = 6, drift_steps = 3
  real(c_double), parameter :: spacing = 1, length = lattice * spacing
  real(c_double), parameter :: r_e = 2.1_c_double * spacing, skin = 0.4_c_double * spacing
  real(c_double), parameter :: speed = 0.03_c_double * spacing  ! per component and step: drift < skin / 2
  type(domex_comm) :: comm
  type(domex_buckets) :: buckets
  type(domex_ghost) :: ghosts
  type(domex_profile) :: profile
  real(c_double), allocatable :: x(:), y(:), z(:), id(:), full(:), half(:), exact(:), everyone(:, :)
  real(c_double) :: position(3), worst(2), mean
  integer :: rank, size, local, entries, i, j, k, n, step, wrong, ghost_total

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  call domex_comm_create(MPI_COMM_WORLD, comm)
  call domex_profile_create(profile)
  call domex_buckets_create(comm, [0d0, 0d0, 0d0], [length, length, length], &
                            [buckets_per_axis, buckets_per_axis, buckets_per_axis], buckets, &
                            periodic=[.true., .true., .true.])

  ! A jittered cubic lattice; every rank keeps the particles its buckets hold
  ! (id = lattice index, 0-based).
  allocate(x(0), y(0), z(0), id(0))
  do k = 0, lattice - 1
    do j = 0, lattice - 1
      do i = 0, lattice - 1
        n = i + lattice * (j + lattice * k)
        position = spacing * ([i, j, k] + 0.5d0 + 0.15d0 * [sin(1.3d0 * n), sin(2.9d0 * n), sin(4.1d0 * n)])
        if (domex_buckets_owner(buckets, position) /= rank) cycle
        x = [x, position(1)]
        y = [y, position(2)]
        z = [z, position(3)]
        id = [id, real(n, c_double)]
      end do
    end do
  end do
  local = ubound(x, 1)

  call domex_profile_begin(profile, 'ghost build')
  call domex_ghost_create(comm, buckets, x, y, z, r_e + skin, ghosts)
  call domex_profile_end(profile, 'ghost build')
  call grow_fields()
  wrong = 0
  do step = 0, drift_steps + 1
    if (step >= 1 .and. step <= drift_steps) then
      ! Drift, then refresh the ghost positions only. Positions are not
      ! wrapped into the box until the rebuild: the plan's image shifts are
      ! for the positions it was built with.
      do i = 1, local
        x(i) = x(i) + speed * sin(0.7d0 * id(i))
        y(i) = y(i) + speed * cos(1.1d0 * id(i))
        z(i) = z(i) + speed * sin(1.9d0 * id(i) + 0.3d0)
      end do
      call domex_profile_begin(profile, 'ghost update')
      call domex_ghost_update_positions(ghosts, x, y, z)
      call domex_profile_end(profile, 'ghost update')
    else if (step == drift_steps + 1) then
      ! The rebuild (after a migration, in a real code): wrap, new plan.
      x(1:local) = modulo(x(1:local), length)
      y(1:local) = modulo(y(1:local), length)
      z(1:local) = modulo(z(1:local), length)
      call domex_profile_begin(profile, 'ghost build')
      call domex_ghost_rebuild(ghosts, x(1:local), y(1:local), z(1:local))
      call domex_profile_end(profile, 'ghost build')
      call grow_fields()
    end if

    call domex_profile_begin(profile, 'density')
    call full_pairs()
    call half_pairs()
    call domex_profile_end(profile, 'density')
    call domex_profile_begin(profile, 'reverse sum')
    call domex_ghost_reverse_sum(ghosts, half)
    call domex_profile_end(profile, 'reverse sum')
    call brute_force()

    worst = [max(0d0, maxval(abs(half(1:local) - full(1:local)))), &   ! maxval of nothing is -huge
             max(0d0, maxval(abs(full(1:local) - exact)))]
    call MPI_Allreduce(MPI_IN_PLACE, worst, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
    mean = sum(full(1:local))
    ghost_total = entries - local
    call MPI_Allreduce(MPI_IN_PLACE, mean, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Allreduce(MPI_IN_PLACE, ghost_total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    mean = mean / lattice**3
    if (any(worst > 1d-12 * mean)) wrong = 1
    if (rank == 0) write(*, '(a,i0,a,i0,a,f10.6,a,es9.2,a,es9.2)') 'step ', step, ': ghosts ', ghost_total, &
      ', mean n ', mean, ', max |half - full| ', worst(1), ', max |full - brute force| ', worst(2)
  end do

  if (rank == 0) then
    if (wrong == 0) then
      write(*, '(a,i0,a,i0,a)') 'ok: half pairs + reverse sum = full pairs = brute force for ', lattice**3, &
        ' particles, np = ', size
    else
      write(*, '(a)') 'WRONG: the densities differ'
    end if
  end if
  call domex_profile_print(profile, comm, 'fortran ghost density')
  call domex_profile_free(profile)
  call domex_ghost_free(ghosts)
  call domex_buckets_free(buckets)
  call domex_comm_free(comm)
  call MPI_Finalize()
  if (wrong /= 0) error stop 1

contains

  !> MPS weight: r_e / r - 1 inside r_e, 0 outside.
  real(c_double) function weight(r)
    real(c_double), intent(in) :: r
    weight = 0
    if (r < r_e .and. r > 0) weight = r_e / r - 1
  end function

  real(c_double) function distance(a, b)
    integer, intent(in) :: a, b
    distance = sqrt((x(a) - x(b))**2 + (y(a) - y(b))**2 + (z(a) - z(b))**2)
  end function

  !> Fields of domex_ghost_size() entries (owned first); the ghosts' ids and
  !> positions from their owners.
  subroutine grow_fields()
    entries = domex_ghost_size(ghosts)
    x = [x(1:local), (0d0, i = local + 1, entries)]
    y = [y(1:local), (0d0, i = local + 1, entries)]
    z = [z(1:local), (0d0, i = local + 1, entries)]
    id = [id(1:local), (-1d0, i = local + 1, entries)]
    if (allocated(half)) deallocate(half, full)
    allocate(half(entries), full(entries))
    call domex_ghost_update(ghosts, id)
    call domex_ghost_update_positions(ghosts, x, y, z)
  end subroutine

  subroutine full_pairs()
    integer :: a, b
    full = 0
    do a = 1, local
      do b = 1, entries
        if (b /= a) full(a) = full(a) + weight(distance(a, b))
      end do
    end do
  end subroutine

  !> Each pair once; what lands on a ghost is its owner's, summed back later.
  subroutine half_pairs()
    integer :: a, b
    real(c_double) :: w
    half = 0
    do a = 1, local
      do b = a + 1, entries
        if (b > local .and. id(b) < id(a)) cycle  ! the rank holding the smaller id has it
        w = weight(distance(a, b))
        half(a) = half(a) + w
        half(b) = half(b) + w
      end do
    end do
  end subroutine

  !> Every particle of every rank, minimum image: the density without ghosts.
  subroutine brute_force()
    integer :: counts(size), displacements(size), r, a, b
    real(c_double) :: d(3), mine(3, local)
    mine(1, :) = x(1:local)
    mine(2, :) = y(1:local)
    mine(3, :) = z(1:local)
    call MPI_Allgather(3 * local, 1, MPI_INTEGER, counts, 1, MPI_INTEGER, MPI_COMM_WORLD)
    displacements = [(sum(counts(1:r - 1)), r = 1, size)]
    if (allocated(everyone)) deallocate(everyone)
    allocate(everyone(3, sum(counts) / 3))
    call MPI_Allgatherv(mine, 3 * local, MPI_DOUBLE_PRECISION, everyone, counts, displacements, &
                        MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
    if (allocated(exact)) deallocate(exact)
    allocate(exact(local))
    exact = 0
    do a = 1, local
      do b = 1, ubound(everyone, 2)
        d = mine(:, a) - everyone(:, b)
        d = d - length * anint(d / length)
        if (any(d /= 0)) exact(a) = exact(a) + weight(sqrt(sum(d * d)))
      end do
    end do
  end subroutine

end program
