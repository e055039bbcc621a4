! SPDX-License-Identifier: BSD-3-Clause
! Particle migration from Fortran: an array of particles (a bind(c) type
! with its position inside) is load-balanced with domex's multisection
! decomposition and moved to the owners of the positions, twice: first from
! everywhere (general exchange), then after a small drift (neighbours only).
! Checks that every particle ends on its owner and that none is lost or
! duplicated (count and sum of ids).
!
!   scripts/run -n 4 build/release/examples/fortran/fortran_migrate
program migrate_particles
  use, intrinsic :: iso_c_binding
  use mpi_f08
  use domex
  implicit none
  type, bind(c) :: particle
    real(c_double) :: x(3)
    integer(c_int64_t) :: id
  end type
  integer, parameter :: per_rank = 1000
  type(particle), allocatable, target :: p(:)
  type(particle), pointer :: moved(:)
  type(domex_comm) :: comm
  type(domex_multisection) :: domains
  type(domex_migration) :: plan
  type(domex_buffer) :: buffer
  type(c_ptr) :: data
  integer(c_size_t) :: bytes
  integer(c_int64_t) :: count_and_ids(2), total
  integer :: rank, size, i, round, wrong, leaving
  real(c_double) :: r

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, size)
  call domex_comm_create(MPI_COMM_WORLD, comm)
  call domex_buffer_create(buffer)

  ! Particles clustered towards x = 0 (x = r^2), ids unique over all ranks.
  call random_seed_for(rank)
  allocate(p(per_rank))
  do i = 1, per_rank
    call random_number(r)
    p(i)%x(1) = r * r
    call random_number(p(i)%x(2))
    call random_number(p(i)%x(3))
    p(i)%id = int(rank, c_int64_t) * per_rank + i - 1
  end do
  total = int(size, c_int64_t) * per_rank

  call domex_multisection_create(comm, [0d0, 0d0, 0d0], [1d0, 1d0, 1d0], domains, &
                                 periodic=[.true., .true., .true.], neighbour_margin=0.01_c_double)
  ! The positions inside the particles: p%x(1) etc. are strided arrays.
  call domex_multisection_rebalance(domains, p%x(1), p%x(2), p%x(3))

  wrong = 0
  do round = 1, 2
    if (round == 2) p(:)%x(1) = modulo(p(:)%x(1) + 0.005_c_double, 1.0_c_double)  ! drift less than the margin
    call domex_migration_create(comm, domains, p%x(1), p%x(2), p%x(3), plan)
    leaving = domex_migration_leaving(plan)
    call domex_migrate(plan, per_rank_now(), c_sizeof(p(1)), c_loc(p), buffer)
    call domex_migration_free(plan)
    ! The new particles: those that stayed, then the arrivals by source.
    call domex_buffer_data(buffer, data, bytes)
    call c_f_pointer(data, moved, [int(bytes / c_sizeof(p(1)))])
    p = moved
    do i = 1, ubound(p, 1)
      if (domex_multisection_owner(domains, p(i)%x) /= rank) wrong = 1
    end do
    if (rank == 0) write(*, '(a,i0,a,i0,a)') 'round ', round, ': rank 0 sent ', leaving, ' particles away'
  end do

  count_and_ids = [int(ubound(p, 1), c_int64_t), sum(p(:)%id)]
  call MPI_Allreduce(MPI_IN_PLACE, count_and_ids, 2, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
  if (count_and_ids(1) /= total .or. count_and_ids(2) /= total * (total - 1) / 2) wrong = 1
  call MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
  if (rank == 0) then
    if (wrong == 0) then
      write(*, '(a,i0,a,i0,a)') 'ok: ', count_and_ids(1), ' particles on their owners over ', size, &
        ' ranks, none lost or duplicated'
    else
      write(*, '(a)') 'WRONG: a particle is on the wrong rank, lost or duplicated'
    end if
  end if

  call domex_buffer_free(buffer)
  call domex_multisection_free(domains)
  call domex_comm_free(comm)
  call MPI_Finalize()
  if (wrong /= 0) error stop 1

contains

  integer function per_rank_now()
    per_rank_now = ubound(p, 1)
  end function

  subroutine random_seed_for(rank)
    integer, intent(in) :: rank
    integer :: n
    integer, allocatable :: seed(:)
    call random_seed(size=n)
    allocate(seed(n))
    seed = 12345 + 7919 * rank + [(i, i = 1, n)]
    call random_seed(put=seed)
  end subroutine

end program
