! SPDX-License-Identifier: BSD-3-Clause
! The Fortran module's error paths and handles: every failing call sets ierr
! and a message (domex_last_error) on every rank concerned, outputs stay
! untouched, and the objects stay usable. Ghost values of a 3-D and a 4-D
! exchange, and owned values after their reverse sum, are checked against
! values computed here, ghost particles of a bucket decomposition against
! brute force. Exit code 1 on any failure (reduced over the ranks).
program test_fortran
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use domex
  implicit none
  type(domex_comm) :: comm, from_integer
  type(domex_halo) :: halo, none
  type(domex_inbox) :: inbox
  type(domex_profile) :: profile
  type, bind(c) :: particle
    real(c_double) :: x(3), id
  end type
  real(c_double), allocatable :: a(:, :, :), b(:, :, :), f(:, :, :, :)
  integer(c_int), allocatable :: ranks(:)
  integer(c_size_t), allocatable :: offsets(:)
  real(c_double), target :: payload(1)
  integer(c_int), pointer :: sources(:)
  integer :: rank, size, ierr, failures, n(3), o(3), i, j, k, axis, direction(3), cell(3), copies
  logical :: ghosts_ok, below(3), above(3)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  failures = 0

  call domex_comm_create(MPI_COMM_WORLD, comm)
  call domex_comm_create(MPI_COMM_WORLD%MPI_VAL, from_integer)   ! integer (mpi / mpif.h) handle
  call check(domex_comm_rank(from_integer) == rank .and. domex_comm_size(comm) == size, 'comm rank and size')
  call domex_comm_free(from_integer)
  call check(.not. c_associated(from_integer%handle), 'comm freed')

  ! Bad arguments: ierr and a message on every rank, no handle.
  call domex_halo_create(comm, [8, 8, 8], 0, none, ierr=ierr)
  call check(ierr == DOMEX_ERR_ARGUMENT .and. index(domex_last_error(), 'depth 0') > 0, 'depth 0')
  call check(.not. c_associated(none%handle), 'no handle after an error')
  call domex_halo_create(comm, [8, 8, 8], 1, none, dims=[size + 1, 1, 1], ierr=ierr)
  call check(ierr /= DOMEX_SUCCESS .and. len(domex_last_error()) > 0, 'bad dims')
  call domex_halo_create(comm, [8, 8, 8], 1, none, neighbours=merge(5, 6, rank == 0), ierr=ierr)
  call check(ierr == DOMEX_ERR_ARGUMENT .and. index(domex_last_error(), 'rank 0') > 0, 'neighbours 5 on rank 0')

  ! A deep halo, periodic on x and z: ghosts of a 3-D pair and of a 4-D array.
  call domex_halo_create(comm, [11, 9, 7], 2, halo, periodic=[.true., .false., .true.])
  n = domex_halo_local_cells(halo)
  o = domex_halo_offset(halo)
  allocate(a(-1:n(1)+2, -1:n(2)+2, -1:n(3)+2), b(-1:n(1)+2, -1:n(2)+2, -1:n(3)+2))
  allocate(f(-1:n(1)+2, -1:n(2)+2, -1:n(3)+2, 3))
  a = -1
  do k = 1, n(3)
    do j = 1, n(2)
      do i = 1, n(1)
        a(i, j, k) = value(o(1) + i, o(2) + j, o(3) + k)
      end do
    end do
  end do
  b = 2 * a
  f(:, :, :, 1) = a
  f(:, :, :, 2) = b
  f(:, :, :, 3) = -a
  call domex_halo_exchange(halo, a, b)
  call domex_halo_exchange(halo, f)
  ghosts_ok = .true.
  do k = -1, n(3) + 2
    do j = -1, n(2) + 2
      do i = -1, n(1) + 2
        if (o(2) + j < 1 .or. o(2) + j > 9) then
          ghosts_ok = ghosts_ok .and. a(i, j, k) == -1 .and. f(i, j, k, 1) == -1   ! y not periodic: untouched
        else
          ghosts_ok = ghosts_ok .and. a(i, j, k) == value(o(1) + i, o(2) + j, o(3) + k) .and. &
                      b(i, j, k) == 2 * a(i, j, k) .and. f(i, j, k, 1) == a(i, j, k) .and. &
                      f(i, j, k, 2) == b(i, j, k) .and. f(i, j, k, 3) == -a(i, j, k)
        end if
      end do
    end do
  end do
  call check(ghosts_ok, 'ghost values of 3-D and 4-D fields')

  ! A field of the wrong size on rank 0: an error there and on its neighbours,
  ! then the plan still works.
  if (rank == 0) then
    call domex_halo_exchange(halo, a(0:, :, :), ierr=ierr)
    call check(ierr == DOMEX_ERR_ARGUMENT, 'wrong-size field on rank 0')
  else
    call domex_halo_exchange(halo, a, ierr=ierr)
    call check(ierr == DOMEX_ERR_LIBRARY .and. index(domex_last_error(), 'rank 0') > 0, 'neighbour of a bad rank')
  end if
  call domex_halo_exchange(halo, a, b, ierr=ierr)
  call check(ierr == DOMEX_SUCCESS, 'usable after an error')

  ! Reverse sum: every cell with an owner holds its global cell's value,
  ! ghosts too; afterwards an owned cell is that value times its copies on all
  ! ranks (per axis itself, plus the neighbour below / above where the cell is
  ! within the depth of that side), and the ghosts are unchanged.
  do k = -1, n(3) + 2
    do j = -1, n(2) + 2
      do i = -1, n(1) + 2
        if (o(2) + j < 1 .or. o(2) + j > 9) then
          b(i, j, k) = -1
        else
          b(i, j, k) = value(o(1) + i, o(2) + j, o(3) + k)
        end if
      end do
    end do
  end do
  a = b
  f(:, :, :, 1) = b
  f(:, :, :, 2) = 3 * b
  f(:, :, :, 3) = -b
  call domex_halo_reverse_sum(halo, a)
  call domex_halo_reverse_sum(halo, f)
  do axis = 1, 3
    direction = 0
    direction(axis) = -1
    below(axis) = domex_halo_neighbour(halo, direction) >= 0
    direction(axis) = 1
    above(axis) = domex_halo_neighbour(halo, direction) >= 0
  end do
  ghosts_ok = .true.
  do k = -1, n(3) + 2
    do j = -1, n(2) + 2
      do i = -1, n(1) + 2
        cell = [i, j, k]
        copies = 1
        do axis = 1, 3
          copies = copies * (1 + merge(1, 0, cell(axis) <= 2 .and. below(axis)) + &
                                 merge(1, 0, cell(axis) > n(axis) - 2 .and. above(axis)))
        end do
        if (any(cell < 1 .or. cell > n)) copies = 1   ! a ghost: unchanged
        ghosts_ok = ghosts_ok .and. a(i, j, k) == copies * b(i, j, k) .and. f(i, j, k, 1) == a(i, j, k) .and. &
                    f(i, j, k, 2) == 3 * a(i, j, k) .and. f(i, j, k, 3) == -a(i, j, k)
      end do
    end do
  end do
  call check(ghosts_ok, 'owned values after the reverse sum of 3-D and 4-D fields')
  if (rank == 0) then
    call domex_halo_reverse_sum(halo, a(0:, :, :), ierr=ierr)
    call check(ierr == DOMEX_ERR_ARGUMENT, 'wrong-size field on rank 0 (reverse)')
  else
    call domex_halo_reverse_sum(halo, a, ierr=ierr)
    call check(ierr == DOMEX_ERR_LIBRARY .and. index(domex_last_error(), 'rank 0') > 0, &
               'neighbour of a bad rank (reverse)')
  end if
  call domex_halo_reverse_sum(halo, a, b, ierr=ierr)
  call check(ierr == DOMEX_SUCCESS, 'reverse usable after an error')
  call domex_halo_free(halo)

  ! Sparse exchange: one double to the next rank; an unknown algorithm on the last rank.
  call domex_inbox_create(inbox)
  ranks = [int(mod(rank + 1, size), c_int)]
  offsets = [0_c_size_t, 1_c_size_t]
  payload = rank
  call domex_exchange(comm, ranks, offsets, c_loc(payload), c_sizeof(payload(1)), inbox, 'nbx')
  call domex_inbox_sources(inbox, sources)
  call check(all(sources == [mod(rank + size - 1, size)]), 'exchange sources')
  call domex_exchange(comm, ranks, offsets, c_loc(payload), c_sizeof(payload(1)), inbox, &
                      merge('bogus', 'nbx  ', rank == size - 1), ierr=ierr)
  call check(ierr == DOMEX_ERR_ARGUMENT .and. index(domex_last_error(), 'bogus') > 0, 'unknown algorithm')
  call domex_inbox_sources(inbox, sources)
  call check(ubound(sources, 1) == 0, 'inbox empty after an error')
  call domex_inbox_free(inbox)

  ! Profile: ending a phase never begun.
  call domex_profile_create(profile)
  call domex_profile_end(profile, 'kernel', ierr=ierr)
  call check(ierr == DOMEX_ERR_ARGUMENT .and. index(domex_last_error(), 'was not begun') > 0, 'profile end')
  call domex_profile_add(profile, 'kernel', 0.5_c_double)
  call check(domex_profile_seconds(profile, 'kernel') == 0.5_c_double, 'profile add')
  call domex_profile_free(profile)

  call test_ghost()

  call domex_comm_free(comm)
  call MPI_Allreduce(MPI_IN_PLACE, failures, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  if (rank == 0) write(*, '(a,a,i0)') merge('test_fortran: passed', 'test_fortran: FAILED', failures == 0), &
    ' at np ', size
  call MPI_Finalize()
  if (failures /= 0) error stop 1

contains

  real(c_double) function value(i, j, k)
    integer, intent(in) :: i, j, k
    value = modulo(i - 1, 11) + 100 * (j - 1) + 10000 * modulo(k - 1, 7)
  end function

  ! Ghost particles of a periodic bucket decomposition against brute force:
  ! every particle of every rank and its 27 images within the cutoff of this
  ! rank's buckets (own particles unshifted excluded); ghost ids and shifted
  ! positions after updates; the reverse sum of ghost counts; errors.
  subroutine test_ghost()
    integer, parameter :: counts(3) = [4, 4, 4]
    real(c_double), parameter :: cutoff = 0.2_c_double
    type(domex_buckets) :: buckets
    type(domex_ghost) :: ghost, none
    real(c_double), allocatable :: points(:, :), x(:), y(:), z(:), id(:), copies(:), r(:, :), bucket_lo(:, :)
    integer, allocatable :: bucket_rank(:)
    real(c_double), pointer :: ghost_x(:, :)
    type(particle), allocatable, target :: records(:)
    real(c_double) :: q(3), centre(3)
    integer :: total, local, entries, n, i, g, b, s, owner, expected, found, ierr
    logical :: ok
    total = 50 * size
    allocate(points(3, 0:total - 1))
    do n = 0, total - 1   ! Weyl sequences: deterministic, spread over [0, 1)^3
      points(:, n) = modulo([0.6180339887d0, 0.4142135624d0, 0.7320508076d0] * n + [0.01d0, 0.1d0, 0.05d0], 1d0)
    end do
    local = (total - 1 - rank) / size + 1   ! ids rank, rank + size, ...
    call domex_buckets_create(comm, [0d0, 0d0, 0d0], [1d0, 1d0, 1d0], counts, buckets, &
                              periodic=[.true., .true., .true.])
    allocate(bucket_lo(3, product(counts)), bucket_rank(product(counts)))
    do b = 1, product(counts)
      bucket_lo(:, b) = real([mod(b - 1, 4), mod((b - 1) / 4, 4), (b - 1) / 16], c_double) / 4
      centre = bucket_lo(:, b) + 0.125d0
      bucket_rank(b) = domex_buckets_owner(buckets, centre)
    end do
    x = points(1, rank::size)
    y = points(2, rank::size)
    z = points(3, rank::size)
    call domex_ghost_create(comm, buckets, x, y, z, cutoff, ghost)
    entries = domex_ghost_size(ghost)
    call check(domex_ghost_local_count(ghost) == local .and. entries == local + domex_ghost_count(ghost), &
               'ghost counts')
    ! Brute force: (particle, image) pairs near this rank's buckets.
    expected = 0
    do n = 0, total - 1
      do s = 0, 26
        if (mod(n, size) == rank .and. s == 13) cycle
        q = points(:, n) + [mod(s, 3) - 1, mod(s / 3, 3) - 1, s / 9 - 1]
        if (near(q, rank, bucket_lo, bucket_rank, cutoff)) expected = expected + 1
      end do
    end do
    call check(domex_ghost_count(ghost) == expected, 'ghost count equals brute force')
    ! Updates: ids, x, y, z (separate and as r(3, n)); ghosts are images of their ids.
    allocate(id(entries), r(3, entries), copies(entries))
    id = -1
    id(1:local) = [(real(rank + (i - 1) * size, c_double), i = 1, local)]
    x = [x, (-1d0, i = 1, entries - local)]
    y = [y, (-1d0, i = 1, entries - local)]
    z = [z, (-1d0, i = 1, entries - local)]
    r = -1
    r(1, 1:local) = x(1:local)
    r(2, 1:local) = y(1:local)
    r(3, 1:local) = z(1:local)
    call domex_ghost_update(ghost, id)
    call domex_ghost_update_positions(ghost, x, y, z)
    call domex_ghost_update_positions(ghost, r)
    call domex_ghost_positions(ghost, ghost_x)
    ok = .true.
    do g = 1, entries - local
      i = local + g
      n = nint(id(i))
      ok = ok .and. n >= 0 .and. n < total .and. all(r(:, i) == ghost_x(:, g)) .and. x(i) == ghost_x(1, g) .and. &
           y(i) == ghost_x(2, g) .and. z(i) == ghost_x(3, g)
      if (n >= 0 .and. n < total) &
        ok = ok .and. all(abs(ghost_x(:, g) - points(:, n) - nint(ghost_x(:, g) - points(:, n))) < 1d-12) .and. &
             near(ghost_x(:, g), rank, bucket_lo, bucket_rank, cutoff)
    end do
    call check(ok, 'ghost ids and shifted positions')
    ! The same through an array of bind(c) records, the position shifted.
    allocate(records(entries))
    records(:)%x(1) = -1
    records(:)%x(2) = -1
    records(:)%x(3) = -1
    records(:)%id = -1
    records(1:local) = [(particle([x(i), y(i), z(i)], id(i)), i = 1, local)]
    call domex_ghost_update_records(ghost, c_loc(records), c_sizeof(records(1)), 0_c_size_t)
    ok = .true.
    do i = 1, entries
      ok = ok .and. all(records(i)%x == r(:, i)) .and. records(i)%id == id(i)
    end do
    call check(ok, 'ghost records')
    ! Reverse sum of ones on the ghosts: each owner counts its copies.
    copies = 0
    copies(local + 1:) = 1
    call domex_ghost_reverse_sum(ghost, copies)
    ok = all(copies(local + 1:) == 1)
    do i = 1, local
      n = rank + (i - 1) * size
      found = 0
      do owner = 0, size - 1
        do s = 0, 26
          if (owner == rank .and. s == 13) cycle
          q = points(:, n) + [mod(s, 3) - 1, mod(s / 3, 3) - 1, s / 9 - 1]
          if (near(q, owner, bucket_lo, bucket_rank, cutoff)) found = found + 1
        end do
      end do
      ok = ok .and. copies(i) == found
    end do
    call check(ok, 'reverse sum of ghost copies')
    ! Errors: a field of the wrong size on rank 0; a cutoff over half the period.
    if (rank == 0) then
      call domex_ghost_update(ghost, id, id(2:), ierr=ierr)
    else
      call domex_ghost_update(ghost, id, id, ierr=ierr)
    end if
    if (rank == 0) then
      call check(ierr == DOMEX_ERR_ARGUMENT .and. index(domex_last_error(), 'element size 0') > 0, 'wrong-size field')
    else
      call check(ierr == DOMEX_ERR_ARGUMENT .and. index(domex_last_error(), 'rank 0') > 0, 'wrong size on rank 0')
    end if
    call domex_ghost_create(comm, buckets, x(1:local), y(1:local), z(1:local), 0.6_c_double, none, ierr=ierr)
    call check(ierr == DOMEX_ERR_LIBRARY .and. .not. c_associated(none%handle), 'cutoff over half the period')
    call domex_ghost_rebuild(ghost, x(1:local), y(1:local), z(1:local))
    call check(domex_ghost_count(ghost) == expected, 'rebuild')
    call domex_ghost_free(ghost)
    call check(.not. c_associated(ghost%handle), 'ghost freed')
    call domex_buckets_free(buckets)
  end subroutine

  !> Is q within the cutoff of one of rank r's buckets?
  logical function near(q, r, bucket_lo, bucket_rank, cutoff)
    real(c_double), intent(in) :: q(3), bucket_lo(:, :), cutoff
    integer, intent(in) :: r, bucket_rank(:)
    real(c_double) :: d(3)
    integer :: b
    near = .false.
    do b = 1, ubound(bucket_rank, 1)
      if (bucket_rank(b) /= r) cycle
      d = max(bucket_lo(:, b) - q, 0d0, q - bucket_lo(:, b) - 0.25d0)
      if (sum(d * d) <= cutoff * cutoff) near = .true.
    end do
  end function

  subroutine check(condition, what)
    logical, intent(in) :: condition
    character(len=*), intent(in) :: what
    if (.not. condition) then
      failures = failures + 1
      write(*, '(a,i0,a,a,a,a)') '[rank ', rank, '] failed: ', what, '; last error: ', domex_last_error()
    end if
  end subroutine

end program
