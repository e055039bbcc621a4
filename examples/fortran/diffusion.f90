! SPDX-License-Identifier: BSD-3-Clause
! 3-D diffusion of two species on a periodic grid, with domex's deep halo
! (module `domex`), against the same computation with plain MPI_Sendrecv.
!
! The domex run keeps k ghost layers, u(1-k:nx+k, 1-k:ny+k, 1-k:nz+k, 2) as
! Fortran codes lay them out, exchanges both species in one message per
! neighbour every k steps (the 4-D array's variables travel together), and
! updates a region that shrinks by one layer per step in between. The plain
! MPI run keeps one ghost layer and exchanges the six faces of each species
! with MPI_Sendrecv every step. The same stencil routine updates both, so the
! owned cells must agree bitwise: checked for k = 1, 2, 3 with 26 neighbours
! and k = 2 with 6 (faces forwarded in three rounds).
!
!   scripts/run -n 4 build/release/examples/fortran/fortran_diffusion
program diffusion
  use, intrinsic :: iso_c_binding, only: c_double, c_int64_t
  use mpi_f08
  use domex
  implicit none
  integer, parameter :: global(3) = [24, 20, 16], steps = 12, species = 2
  real(c_double), parameter :: nu(species) = [0.1_c_double, 0.05_c_double]
  type(domex_comm) :: comm
  type(domex_halo) :: halo
  type(domex_profile) :: profile
  real(c_double), allocatable :: u(:, :, :, :), v(:, :, :, :)
  real(c_double) :: sum_u
  integer :: n(3), offset(3), dims(3), rank, run, k, neighbours, wrong, any_wrong
  integer, parameter :: depths(4) = [1, 2, 3, 2], neighbour_counts(4) = [26, 26, 26, 6]

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call domex_comm_create(MPI_COMM_WORLD, comm)
  call domex_profile_create(profile)
  any_wrong = 0

  do run = 1, size(depths)
    k = depths(run)
    neighbours = neighbour_counts(run)
    call domex_halo_create(comm, global, k, halo, periodic=[.true., .true., .true.], neighbours=neighbours)
    n = domex_halo_local_cells(halo)
    offset = domex_halo_offset(halo)
    dims = domex_halo_dims(halo)

    ! domex: k ghost layers, one exchange every k steps.
    allocate(u(1-k:n(1)+k, 1-k:n(2)+k, 1-k:n(3)+k, species))
    call initial(u, n, offset)
    call run_domex(u, n, k)

    ! plain MPI: one ghost layer, six MPI_Sendrecv per species every step.
    allocate(v(0:n(1)+1, 0:n(2)+1, 0:n(3)+1, species))
    call initial(v, n, offset)
    call run_plain_mpi(v, n, dims)

    wrong = 0
    if (any(transfer(u(1:n(1), 1:n(2), 1:n(3), :), 0_c_int64_t, size=product(n)*species) /= &
            transfer(v(1:n(1), 1:n(2), 1:n(3), :), 0_c_int64_t, size=product(n)*species))) wrong = 1
    call MPI_Allreduce(MPI_IN_PLACE, wrong, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
    sum_u = total(u, n)
    if (rank == 0) then
      if (wrong == 0) then
        write(*, '(a,i0,a,i0,a,3(i0,1x),a,es24.16)') 'ok: depth ', k, ', ', neighbours, &
          ' neighbours, dims ', dims, 'equals plain MPI_Sendrecv bitwise; sum ', sum_u
      else
        write(*, '(a,i0,a,i0,a)') 'WRONG: depth ', k, ', ', neighbours, ' neighbours differs from plain MPI'
      end if
    end if
    any_wrong = max(any_wrong, wrong)
    deallocate(u, v)
    call domex_halo_free(halo)
  end do

  call domex_profile_print(profile, comm, 'fortran diffusion (domex runs)')
  call domex_profile_free(profile)
  call domex_comm_free(comm)
  call MPI_Finalize()
  if (any_wrong /= 0) error stop 1

contains

  !> Species s at global cell (i, j, k): smooth, different per species.
  subroutine initial(f, n, offset)
    real(c_double), intent(out) :: f(:, :, :, :)
    integer, intent(in) :: n(3), offset(3)
    integer :: i, j, l, s, g, lb
    real(c_double), parameter :: pi = 3.14159265358979323846_c_double
    f = 0
    g = (size(f, 1) - n(1)) / 2  ! ghost layers (f's lower bound here is 1)
    lb = g
    do s = 1, species
      do l = 1, n(3)
        do j = 1, n(2)
          do i = 1, n(1)
            f(lb+i, lb+j, lb+l, s) = s + sin(2 * pi * (offset(1) + i) / global(1)) * &
                                     cos(2 * pi * (offset(2) + j) / global(2)) * &
                                     sin(2 * pi * s * (offset(3) + l) / global(3))
          end do
        end do
      end do
    end do
  end subroutine

  !> One explicit diffusion step on cells lo..hi (any ghost width g).
  subroutine stencil(f, fnew, g, lo, hi, c)
    integer, intent(in) :: g, lo(3), hi(3)
    real(c_double), intent(in) :: f(1-g:, 1-g:, 1-g:)
    real(c_double), intent(inout) :: fnew(1-g:, 1-g:, 1-g:)
    real(c_double), intent(in) :: c
    integer :: i, j, l
    do l = lo(3), hi(3)
      do j = lo(2), hi(2)
        do i = lo(1), hi(1)
          fnew(i, j, l) = f(i, j, l) + c * (f(i-1, j, l) + f(i+1, j, l) + f(i, j-1, l) + f(i, j+1, l) + &
                                            f(i, j, l-1) + f(i, j, l+1) - 6 * f(i, j, l))
        end do
      end do
    end do
  end subroutine

  subroutine run_domex(u, n, k)
    integer, intent(in) :: n(3), k
    real(c_double), intent(inout), contiguous :: u(1-k:, 1-k:, 1-k:, :)
    real(c_double), allocatable :: unew(:, :, :, :)
    integer :: step, since, s, grow
    allocate(unew, mold=u)
    unew = u
    since = k
    do step = 1, steps
      if (since == k) then
        call domex_profile_begin(profile, 'exchange')
        call domex_halo_exchange(halo, u)   ! both species, one message per neighbour
        call domex_profile_end(profile, 'exchange')
        since = 0
      end if
      since = since + 1
      grow = k - since                      ! valid ghost layers left after this step
      call domex_profile_begin(profile, 'kernel')
      do s = 1, species
        call stencil(u(:, :, :, s), unew(:, :, :, s), k, [1-grow, 1-grow, 1-grow], n + grow, nu(s))
      end do
      call domex_profile_end(profile, 'kernel')
      u = unew
    end do
  end subroutine

  subroutine run_plain_mpi(v, n, dims)
    real(c_double), intent(inout), contiguous :: v(0:, 0:, 0:, :)
    integer, intent(in) :: n(3), dims(3)
    real(c_double), allocatable :: vnew(:, :, :, :)
    type(MPI_Comm) :: cart
    integer :: step, s, axis, lower, upper
    ! Same rank layout as domex's grid: MPI_Cart_create without reordering.
    call MPI_Cart_create(MPI_COMM_WORLD, 3, dims, [.true., .true., .true.], .false., cart)
    allocate(vnew, mold=v)
    vnew = v
    do step = 1, steps
      do s = 1, species
        do axis = 1, 3
          call MPI_Cart_shift(cart, axis - 1, 1, lower, upper)
          call exchange_faces(v(:, :, :, s), n, axis, lower, upper, cart)
        end do
        call stencil(v(:, :, :, s), vnew(:, :, :, s), 1, [1, 1, 1], n, nu(s))
      end do
      v = vnew
    end do
    call MPI_Comm_free(cart)
  end subroutine

  !> Faces of one species along one axis: owned layer 1 goes down and comes
  !> back as ghost layer n+1, owned layer n goes up and lands in ghost 0.
  subroutine exchange_faces(f, n, axis, lower, upper, cart)
    real(c_double), intent(inout) :: f(0:, 0:, 0:)
    integer, intent(in) :: n(3), axis, lower, upper
    type(MPI_Comm), intent(in) :: cart
    real(c_double), allocatable :: out(:, :), in(:, :)
    select case (axis)
    case (1)
      allocate(out(0:n(2)+1, 0:n(3)+1), in(0:n(2)+1, 0:n(3)+1))
      out = f(1, :, :)
      call MPI_Sendrecv(out, size(out), MPI_DOUBLE_PRECISION, lower, 1, in, size(in), MPI_DOUBLE_PRECISION, &
                        upper, 1, cart, MPI_STATUS_IGNORE)
      f(n(1)+1, 1:n(2), 1:n(3)) = in(1:n(2), 1:n(3))
      out = f(n(1), :, :)
      call MPI_Sendrecv(out, size(out), MPI_DOUBLE_PRECISION, upper, 2, in, size(in), MPI_DOUBLE_PRECISION, &
                        lower, 2, cart, MPI_STATUS_IGNORE)
      f(0, 1:n(2), 1:n(3)) = in(1:n(2), 1:n(3))
    case (2)
      allocate(out(0:n(1)+1, 0:n(3)+1), in(0:n(1)+1, 0:n(3)+1))
      out = f(:, 1, :)
      call MPI_Sendrecv(out, size(out), MPI_DOUBLE_PRECISION, lower, 3, in, size(in), MPI_DOUBLE_PRECISION, &
                        upper, 3, cart, MPI_STATUS_IGNORE)
      f(1:n(1), n(2)+1, 1:n(3)) = in(1:n(1), 1:n(3))
      out = f(:, n(2), :)
      call MPI_Sendrecv(out, size(out), MPI_DOUBLE_PRECISION, upper, 4, in, size(in), MPI_DOUBLE_PRECISION, &
                        lower, 4, cart, MPI_STATUS_IGNORE)
      f(1:n(1), 0, 1:n(3)) = in(1:n(1), 1:n(3))
    case (3)
      allocate(out(0:n(1)+1, 0:n(2)+1), in(0:n(1)+1, 0:n(2)+1))
      out = f(:, :, 1)
      call MPI_Sendrecv(out, size(out), MPI_DOUBLE_PRECISION, lower, 5, in, size(in), MPI_DOUBLE_PRECISION, &
                        upper, 5, cart, MPI_STATUS_IGNORE)
      f(1:n(1), 1:n(2), n(3)+1) = in(1:n(1), 1:n(2))
      out = f(:, :, n(3))
      call MPI_Sendrecv(out, size(out), MPI_DOUBLE_PRECISION, upper, 6, in, size(in), MPI_DOUBLE_PRECISION, &
                        lower, 6, cart, MPI_STATUS_IGNORE)
      f(1:n(1), 1:n(2), 0) = in(1:n(1), 1:n(2))
    end select
  end subroutine

  !> Sum of species 1 over all owned cells (printed, not compared).
  real(c_double) function total(f, n)
    real(c_double), intent(in) :: f(:, :, :, :)
    integer, intent(in) :: n(3)
    integer :: g
    g = (size(f, 1) - n(1)) / 2
    total = sum(f(g+1:g+n(1), g+1:g+n(2), g+1:g+n(3), 1))
    call MPI_Allreduce(MPI_IN_PLACE, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  end function

end program
