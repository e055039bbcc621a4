! SPDX-License-Identifier: BSD-3-Clause
! Fortran 2008 module `domex` over the C API (include/domex/domex.h).
!
!   use domex
!   type(domex_comm) :: comm
!   type(domex_halo) :: halo
!   call domex_comm_create(MPI_COMM_WORLD, comm)           ! type(MPI_Comm) or integer handle
!   call domex_halo_create(comm, [nx, ny, nz], 2, halo)    ! deep halo: 2 ghost layers
!   allocate(rho(1-2:n(1)+2, 1-2:n(2)+2, 1-2:n(3)+2))      ! n from domex_halo_local_cells
!   call domex_halo_exchange(halo, rho, vx, vy, vz)        ! one message per neighbour
!   call domex_halo_reverse_sum(halo, charge)              ! ghosts added into their owners
!
! Every routine takes an optional `ierr` (DOMEX_SUCCESS or an error code; the
! message is domex_last_error()). Without `ierr`, an error prints the message
! and stops the program: collective calls fail on every rank together.
! Ranks are 0-based; offsets are the 0-based global index of the first owned
! cell, so owned cell i (1-based) is global cell offset + i.
module domex
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
  use mpi_f08, only: MPI_Comm
  implicit none
  private

  integer, parameter, public :: DOMEX_SUCCESS = 0, DOMEX_ERR_NULL = 1, DOMEX_ERR_ARGUMENT = 2, &
                                DOMEX_ERR_LIBRARY = 3, DOMEX_ERR_MEMORY = 4, DOMEX_ERR_INTERNAL = 5

  type, public :: domex_comm
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: domex_inbox
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: domex_multisection
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: domex_migration
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: domex_buffer
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: domex_halo
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: domex_profile
    type(c_ptr) :: handle = c_null_ptr
  end type

  public :: domex_last_error, domex_comm_create, domex_comm_free, domex_comm_rank, domex_comm_size
  public :: domex_inbox_create, domex_inbox_free, domex_exchange, domex_inbox_sources, domex_inbox_offsets, &
            domex_inbox_data
  public :: domex_multisection_create, domex_multisection_free, domex_multisection_rebalance, &
            domex_multisection_owner, domex_multisection_box
  public :: domex_migration_create, domex_migration_free, domex_migration_leaving, domex_migrate
  public :: domex_buffer_create, domex_buffer_free, domex_buffer_data
  public :: domex_halo_create, domex_halo_free, domex_halo_local_cells, domex_halo_offset, domex_halo_dims, &
            domex_halo_coords, domex_halo_neighbour, domex_halo_exchange, domex_halo_reverse_sum
  public :: domex_profile_create, domex_profile_free, domex_profile_begin, domex_profile_end, domex_profile_add, &
            domex_profile_seconds, domex_profile_print

  !> A communicator from mpi_f08's type(MPI_Comm) or an integer (mpi / mpif.h) handle.
  interface domex_comm_create
    module procedure comm_create_f08, comm_create_integer
  end interface
  !> Fills the ghosts of up to eight 3-D double fields, or of every variable
  !> m of a 4-D array f(:,:,:,m), in one message per neighbour.
  interface domex_halo_exchange
    module procedure halo_exchange_3d, halo_exchange_4d
  end interface
  !> The reverse: adds every ghost cell of up to eight 3-D double fields, or
  !> of every variable m of a 4-D array, into the cell that owns it, in a
  !> fixed order (bitwise reproducible); ghosts are unchanged.
  interface domex_halo_reverse_sum
    module procedure halo_reverse_sum_3d, halo_reverse_sum_4d
  end interface

  ! ---- the C API ----------------------------------------------------------
  interface
    function c_last_error() bind(c, name="domex_last_error")
      import :: c_ptr
      type(c_ptr) :: c_last_error
    end function
    function c_comm_create_f(comm, out) bind(c, name="domex_comm_create_f")
      import :: c_int, c_ptr
      integer(c_int), value :: comm
      type(c_ptr) :: out
      integer(c_int) :: c_comm_create_f
    end function
    function c_comm_free(comm) bind(c, name="domex_comm_free")
      import :: c_int, c_ptr
      type(c_ptr) :: comm
      integer(c_int) :: c_comm_free
    end function
    function c_comm_rank(comm, rank) bind(c, name="domex_comm_rank")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: rank
      integer(c_int) :: c_comm_rank
    end function
    function c_comm_size(comm, size) bind(c, name="domex_comm_size")
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
      integer(c_int) :: size
      integer(c_int) :: c_comm_size
    end function
    function c_inbox_create(out) bind(c, name="domex_inbox_create")
      import :: c_int, c_ptr
      type(c_ptr) :: out
      integer(c_int) :: c_inbox_create
    end function
    function c_inbox_free(inbox) bind(c, name="domex_inbox_free")
      import :: c_int, c_ptr
      type(c_ptr) :: inbox
      integer(c_int) :: c_inbox_free
    end function
    function c_exchange(comm, element_size, message_count, ranks, offsets, data, algorithm, inbox) &
        bind(c, name="domex_exchange")
      import :: c_int, c_ptr, c_size_t, c_char
      type(c_ptr), value :: comm, ranks, offsets, data, inbox
      integer(c_size_t), value :: element_size, message_count
      character(kind=c_char) :: algorithm(*)
      integer(c_int) :: c_exchange
    end function
    function c_inbox_count(inbox, count) bind(c, name="domex_inbox_count")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: inbox
      integer(c_size_t) :: count
      integer(c_int) :: c_inbox_count
    end function
    function c_inbox_pointer(inbox, out) bind(c, name="domex_inbox_sources")
      import :: c_int, c_ptr
      type(c_ptr), value :: inbox
      type(c_ptr) :: out
      integer(c_int) :: c_inbox_pointer
    end function
    function c_inbox_offsets(inbox, out) bind(c, name="domex_inbox_offsets")
      import :: c_int, c_ptr
      type(c_ptr), value :: inbox
      type(c_ptr) :: out
      integer(c_int) :: c_inbox_offsets
    end function
    function c_inbox_data(inbox, data, elements) bind(c, name="domex_inbox_data")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: inbox
      type(c_ptr) :: data
      integer(c_size_t) :: elements
      integer(c_int) :: c_inbox_data
    end function
    function c_multisection_create(comm, lo, hi, divisions, periodic, margin, out) &
        bind(c, name="domex_multisection_create")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: comm
      real(c_double) :: lo(3), hi(3)
      integer(c_int) :: divisions(3), periodic(3)
      real(c_double), value :: margin
      type(c_ptr) :: out
      integer(c_int) :: c_multisection_create
    end function
    function c_multisection_free(handle) bind(c, name="domex_multisection_free")
      import :: c_int, c_ptr
      type(c_ptr) :: handle
      integer(c_int) :: c_multisection_free
    end function
    function c_multisection_rebalance(handle, count, x, y, z, stride, weights) &
        bind(c, name="domex_multisection_rebalance")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, x, y, z, weights
      integer(c_size_t), value :: count, stride
      integer(c_int) :: c_multisection_rebalance
    end function
    function c_multisection_owner(handle, position, rank) bind(c, name="domex_multisection_owner")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: handle
      real(c_double) :: position(3)
      integer(c_int) :: rank
      integer(c_int) :: c_multisection_owner
    end function
    function c_multisection_box(handle, rank, lo, hi) bind(c, name="domex_multisection_box")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: handle
      integer(c_int), value :: rank
      real(c_double) :: lo(3), hi(3)
      integer(c_int) :: c_multisection_box
    end function
    function c_migration_create(comm, multisection, count, x, y, z, stride, algorithm, out) &
        bind(c, name="domex_migration_create")
      import :: c_int, c_ptr, c_size_t, c_char
      type(c_ptr), value :: comm, multisection, x, y, z
      integer(c_size_t), value :: count, stride
      character(kind=c_char) :: algorithm(*)
      type(c_ptr) :: out
      integer(c_int) :: c_migration_create
    end function
    function c_migration_free(handle) bind(c, name="domex_migration_free")
      import :: c_int, c_ptr
      type(c_ptr) :: handle
      integer(c_int) :: c_migration_free
    end function
    function c_migration_leaving(handle, count) bind(c, name="domex_migration_leaving")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      integer(c_size_t) :: count
      integer(c_int) :: c_migration_leaving
    end function
    function c_migrate(handle, count, element_size, records, out) bind(c, name="domex_migrate")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, records, out
      integer(c_size_t), value :: count, element_size
      integer(c_int) :: c_migrate
    end function
    function c_buffer_create(out) bind(c, name="domex_buffer_create")
      import :: c_int, c_ptr
      type(c_ptr) :: out
      integer(c_int) :: c_buffer_create
    end function
    function c_buffer_free(handle) bind(c, name="domex_buffer_free")
      import :: c_int, c_ptr
      type(c_ptr) :: handle
      integer(c_int) :: c_buffer_free
    end function
    function c_buffer_data(handle, data, bytes) bind(c, name="domex_buffer_data")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      type(c_ptr) :: data
      integer(c_size_t) :: bytes
      integer(c_int) :: c_buffer_data
    end function
    function c_halo_create(comm, global_cells, dims, periodic, depth, neighbours, out) &
        bind(c, name="domex_halo_create")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: comm
      integer(c_size_t) :: global_cells(3)
      integer(c_int) :: dims(3), periodic(3)
      integer(c_int), value :: depth, neighbours
      type(c_ptr) :: out
      integer(c_int) :: c_halo_create
    end function
    function c_halo_free(handle) bind(c, name="domex_halo_free")
      import :: c_int, c_ptr
      type(c_ptr) :: handle
      integer(c_int) :: c_halo_free
    end function
    function c_halo_sizes(handle, values) bind(c, name="domex_halo_local_cells")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      integer(c_size_t) :: values(3)
      integer(c_int) :: c_halo_sizes
    end function
    function c_halo_offset(handle, values) bind(c, name="domex_halo_offset")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      integer(c_size_t) :: values(3)
      integer(c_int) :: c_halo_offset
    end function
    function c_halo_cells(handle, cells) bind(c, name="domex_halo_cells")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      integer(c_size_t) :: cells
      integer(c_int) :: c_halo_cells
    end function
    function c_halo_dims(handle, values) bind(c, name="domex_halo_dims")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int) :: values(3)
      integer(c_int) :: c_halo_dims
    end function
    function c_halo_coords(handle, values) bind(c, name="domex_halo_coords")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int) :: values(3)
      integer(c_int) :: c_halo_coords
    end function
    function c_halo_neighbour(handle, direction, rank) bind(c, name="domex_halo_neighbour")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int) :: direction(3)
      integer(c_int) :: rank
      integer(c_int) :: c_halo_neighbour
    end function
    function c_halo_exchange_doubles(handle, count, fields) bind(c, name="domex_halo_exchange_doubles")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int), value :: count
      type(c_ptr) :: fields(*)
      integer(c_int) :: c_halo_exchange_doubles
    end function
    function c_halo_reverse_sum_doubles(handle, count, fields) bind(c, name="domex_halo_reverse_sum_doubles")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int), value :: count
      type(c_ptr) :: fields(*)
      integer(c_int) :: c_halo_reverse_sum_doubles
    end function
    function c_profile_create(out) bind(c, name="domex_profile_create")
      import :: c_int, c_ptr
      type(c_ptr) :: out
      integer(c_int) :: c_profile_create
    end function
    function c_profile_free(handle) bind(c, name="domex_profile_free")
      import :: c_int, c_ptr
      type(c_ptr) :: handle
      integer(c_int) :: c_profile_free
    end function
    function c_profile_begin(handle, phase) bind(c, name="domex_profile_begin")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: handle
      character(kind=c_char) :: phase(*)
      integer(c_int) :: c_profile_begin
    end function
    function c_profile_end(handle, phase) bind(c, name="domex_profile_end")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: handle
      character(kind=c_char) :: phase(*)
      integer(c_int) :: c_profile_end
    end function
    function c_profile_add(handle, phase, seconds) bind(c, name="domex_profile_add")
      import :: c_int, c_ptr, c_char, c_double
      type(c_ptr), value :: handle
      character(kind=c_char) :: phase(*)
      real(c_double), value :: seconds
      integer(c_int) :: c_profile_add
    end function
    function c_profile_seconds(handle, phase, seconds) bind(c, name="domex_profile_seconds")
      import :: c_int, c_ptr, c_char, c_double
      type(c_ptr), value :: handle
      character(kind=c_char) :: phase(*)
      real(c_double) :: seconds
      integer(c_int) :: c_profile_seconds
    end function
    function c_profile_print(handle, comm, title) bind(c, name="domex_profile_print")
      import :: c_int, c_ptr, c_char
      type(c_ptr), value :: handle, comm
      character(kind=c_char) :: title(*)
      integer(c_int) :: c_profile_print
    end function
  end interface

  ! ---- bucket decomposition and ghost particles ---------------------------
  ! A ghost plan: every rank gets copies of the particles of every rank
  ! (periodic images included, positions shifted) within `cutoff` of its
  ! domain; fields hold the owned particles, then the ghosts:
  !   call domex_ghost_create(comm, buckets, x, y, z, r_e + skin, ghosts)
  !   n = domex_ghost_size(ghosts)                   ! owned + ghosts
  !   call domex_ghost_update_positions(ghosts, x, y, z)   ! shifted images
  !   call domex_ghost_update(ghosts, vx, vy, vz)    ! one message per rank
  !   call domex_ghost_reverse_sum(ghosts, density)  ! ghost parts into owners
  type, public :: domex_buckets
    type(c_ptr) :: handle = c_null_ptr
  end type
  type, public :: domex_ghost
    type(c_ptr) :: handle = c_null_ptr
  end type

  public :: domex_buckets_create, domex_buckets_free, domex_buckets_rebalance, domex_buckets_owner
  public :: domex_ghost_create, domex_ghost_free, domex_ghost_rebuild, domex_ghost_local_count, domex_ghost_count, &
            domex_ghost_size, domex_ghost_positions, domex_ghost_update, domex_ghost_update_positions, &
            domex_ghost_update_records, domex_ghost_reverse_sum

  !> Collective: a ghost plan from a multisection or a bucket decomposition.
  interface domex_ghost_create
    module procedure ghost_create_multisection, ghost_create_buckets
  end interface
  !> Collective: ghost positions from the owners' (x, y, z arrays or a
  !> position array r(3, n)), the periodic shift added.
  interface domex_ghost_update_positions
    module procedure ghost_update_xyz, ghost_update_points
  end interface

  interface
    function c_buckets_create(comm, lo, hi, buckets, periodic, out) bind(c, name="domex_buckets_create")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: comm
      real(c_double) :: lo(3), hi(3)
      integer(c_int) :: buckets(3), periodic(3)
      type(c_ptr) :: out
      integer(c_int) :: c_buckets_create
    end function
    function c_buckets_free(handle) bind(c, name="domex_buckets_free")
      import :: c_int, c_ptr
      type(c_ptr) :: handle
      integer(c_int) :: c_buckets_free
    end function
    function c_buckets_rebalance(handle, count, x, y, z, stride, weights) bind(c, name="domex_buckets_rebalance")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, x, y, z, weights
      integer(c_size_t), value :: count, stride
      integer(c_int) :: c_buckets_rebalance
    end function
    function c_buckets_owner(handle, position, rank) bind(c, name="domex_buckets_owner")
      import :: c_int, c_ptr, c_double
      type(c_ptr), value :: handle
      real(c_double) :: position(3)
      integer(c_int) :: rank
      integer(c_int) :: c_buckets_owner
    end function
    function c_ghost_create_multisection(comm, decomposition, count, x, y, z, stride, cutoff, out) &
        bind(c, name="domex_ghost_create_multisection")
      import :: c_int, c_ptr, c_size_t, c_double
      type(c_ptr), value :: comm, decomposition, x, y, z
      integer(c_size_t), value :: count, stride
      real(c_double), value :: cutoff
      type(c_ptr) :: out
      integer(c_int) :: c_ghost_create_multisection
    end function
    function c_ghost_create_buckets(comm, decomposition, count, x, y, z, stride, cutoff, out) &
        bind(c, name="domex_ghost_create_buckets")
      import :: c_int, c_ptr, c_size_t, c_double
      type(c_ptr), value :: comm, decomposition, x, y, z
      integer(c_size_t), value :: count, stride
      real(c_double), value :: cutoff
      type(c_ptr) :: out
      integer(c_int) :: c_ghost_create_buckets
    end function
    function c_ghost_free(handle) bind(c, name="domex_ghost_free")
      import :: c_int, c_ptr
      type(c_ptr) :: handle
      integer(c_int) :: c_ghost_free
    end function
    function c_ghost_rebuild(handle, count, x, y, z, stride) bind(c, name="domex_ghost_rebuild")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, x, y, z
      integer(c_size_t), value :: count, stride
      integer(c_int) :: c_ghost_rebuild
    end function
    function c_ghost_local_count(handle, count) bind(c, name="domex_ghost_local_count")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      integer(c_size_t) :: count
      integer(c_int) :: c_ghost_local_count
    end function
    function c_ghost_count(handle, count) bind(c, name="domex_ghost_count")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      integer(c_size_t) :: count
      integer(c_int) :: c_ghost_count
    end function
    function c_ghost_size(handle, entries) bind(c, name="domex_ghost_size")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle
      integer(c_size_t) :: entries
      integer(c_int) :: c_ghost_size
    end function
    function c_ghost_positions(handle, positions) bind(c, name="domex_ghost_positions")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      type(c_ptr) :: positions
      integer(c_int) :: c_ghost_positions
    end function
    ! position_offsets is const ptrdiff_t* (c_intptr_t: the same width on
    ! every ABI domex builds for; c_ptrdiff_t is Fortran 2018).
    function c_ghost_update(handle, count, fields, element_sizes, position_offsets) bind(c, name="domex_ghost_update")
      import :: c_int, c_ptr, c_size_t, c_intptr_t
      type(c_ptr), value :: handle
      integer(c_int), value :: count
      type(c_ptr) :: fields(*)
      integer(c_size_t) :: element_sizes(*)
      integer(c_intptr_t) :: position_offsets(*)
      integer(c_int) :: c_ghost_update
    end function
    function c_ghost_update_positions(handle, x, y, z, stride) bind(c, name="domex_ghost_update_positions")
      import :: c_int, c_ptr, c_size_t
      type(c_ptr), value :: handle, x, y, z
      integer(c_size_t), value :: stride
      integer(c_int) :: c_ghost_update_positions
    end function
    function c_ghost_reverse_sum_doubles(handle, count, fields) bind(c, name="domex_ghost_reverse_sum_doubles")
      import :: c_int, c_ptr
      type(c_ptr), value :: handle
      integer(c_int), value :: count
      type(c_ptr) :: fields(*)
      integer(c_int) :: c_ghost_reverse_sum_doubles
    end function
  end interface

contains

  !> Message of the last failed call on this thread ("" if none).
  function domex_last_error() result(text)
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    type(c_ptr) :: raw
    integer :: length
    raw = c_last_error()
    call c_f_pointer(raw, chars, [huge(0)])
    length = 0
    do while (chars(length + 1) /= c_null_char)
      length = length + 1
    end do
    allocate(character(len=length) :: text)
    text = transfer(chars(1:length), text)
  end function

  !> ierr = code if present; else stop with the message on an error.
  subroutine finish(code, ierr)
    integer(c_int), intent(in) :: code
    integer, intent(out), optional :: ierr
    if (present(ierr)) then
      ierr = int(code)
    else if (code /= DOMEX_SUCCESS) then
      write(error_unit, '(a)') domex_last_error()
      error stop 1
    end if
  end subroutine

  function c_string(text) result(chars)
    character(len=*), intent(in) :: text
    character(kind=c_char, len=len_trim(text) + 1) :: chars
    chars = trim(text) // c_null_char
  end function

  !> Byte distance between consecutive elements of `x` (c_sizeof(x(1)) for one element).
  function stride_of(x) result(stride)
    real(c_double), intent(in), target :: x(:)
    integer(c_size_t) :: stride
    if (size(x) > 1) then
      stride = int(transfer(c_loc(x(2)), 0_c_intptr_t) - transfer(c_loc(x(1)), 0_c_intptr_t), c_size_t)
    else
      stride = c_sizeof(x(1))
    end if
  end function

  function first(x) result(pointer)
    real(c_double), intent(in), target :: x(:)
    type(c_ptr) :: pointer
    pointer = c_null_ptr
    if (size(x) > 0) pointer = c_loc(x(1))
  end function

  ! ---- communicator -------------------------------------------------------

  subroutine comm_create_f08(comm, domex_handle, ierr)
    type(MPI_Comm), intent(in) :: comm
    type(domex_comm), intent(inout) :: domex_handle
    integer, intent(out), optional :: ierr
    call finish(c_comm_create_f(int(comm%MPI_VAL, c_int), domex_handle%handle), ierr)
  end subroutine

  subroutine comm_create_integer(comm, domex_handle, ierr)
    integer, intent(in) :: comm
    type(domex_comm), intent(inout) :: domex_handle
    integer, intent(out), optional :: ierr
    call finish(c_comm_create_f(int(comm, c_int), domex_handle%handle), ierr)
  end subroutine

  subroutine domex_comm_free(comm, ierr)
    type(domex_comm), intent(inout) :: comm
    integer, intent(out), optional :: ierr
    call finish(c_comm_free(comm%handle), ierr)
  end subroutine

  integer function domex_comm_rank(comm) result(rank)
    type(domex_comm), intent(in) :: comm
    integer(c_int) :: value
    call finish(c_comm_rank(comm%handle, value))
    rank = int(value)
  end function

  integer function domex_comm_size(comm) result(size)
    type(domex_comm), intent(in) :: comm
    integer(c_int) :: value
    call finish(c_comm_size(comm%handle, value))
    size = int(value)
  end function

  ! ---- sparse exchange ----------------------------------------------------

  subroutine domex_inbox_create(inbox, ierr)
    type(domex_inbox), intent(inout) :: inbox
    integer, intent(out), optional :: ierr
    call finish(c_inbox_create(inbox%handle), ierr)
  end subroutine

  subroutine domex_inbox_free(inbox, ierr)
    type(domex_inbox), intent(inout) :: inbox
    integer, intent(out), optional :: ierr
    call finish(c_inbox_free(inbox%handle), ierr)
  end subroutine

  !> Collective: message i goes to ranks(i) (0-based) and holds elements
  !> offsets(i)+1 .. offsets(i+1) of the buffer at `data` (c_loc of an
  !> array), each element_size bytes (c_sizeof). algorithm: "nbx",
  !> "automatic", ... (default automatic).
  subroutine domex_exchange(comm, ranks, offsets, data, element_size, inbox, algorithm, ierr)
    type(domex_comm), intent(in) :: comm
    integer(c_int), intent(in), target, contiguous :: ranks(:)
    integer(c_size_t), intent(in), target, contiguous :: offsets(:)
    type(c_ptr), intent(in) :: data
    integer(c_size_t), intent(in) :: element_size
    type(domex_inbox), intent(in) :: inbox
    character(len=*), intent(in), optional :: algorithm
    integer, intent(out), optional :: ierr
    type(c_ptr) :: ranks_at, offsets_at
    ranks_at = c_null_ptr
    offsets_at = c_null_ptr
    if (size(ranks) > 0) ranks_at = c_loc(ranks(1))
    if (size(offsets) > 0) offsets_at = c_loc(offsets(1))
    if (size(offsets) /= size(ranks) + 1) offsets_at = c_null_ptr
    if (present(algorithm)) then
      call finish(c_exchange(comm%handle, element_size, int(size(ranks), c_size_t), ranks_at, offsets_at, data, &
                             c_string(algorithm), inbox%handle), ierr)
    else
      call finish(c_exchange(comm%handle, element_size, int(size(ranks), c_size_t), ranks_at, offsets_at, data, &
                             c_string("automatic"), inbox%handle), ierr)
    end if
  end subroutine

  !> The sources (0-based ranks, ascending) of the received messages.
  subroutine domex_inbox_sources(inbox, sources)
    type(domex_inbox), intent(in) :: inbox
    integer(c_int), pointer, intent(out) :: sources(:)
    integer(c_size_t) :: count
    type(c_ptr) :: raw
    call finish(c_inbox_count(inbox%handle, count))
    call finish(c_inbox_pointer(inbox%handle, raw))
    call c_f_pointer(raw, sources, [count])
  end subroutine

  !> Element offsets (count + 1): message i holds elements offsets(i)+1 .. offsets(i+1).
  subroutine domex_inbox_offsets(inbox, offsets)
    type(domex_inbox), intent(in) :: inbox
    integer(c_size_t), pointer, intent(out) :: offsets(:)
    integer(c_size_t) :: count
    type(c_ptr) :: raw
    call finish(c_inbox_count(inbox%handle, count))
    call finish(c_inbox_offsets(inbox%handle, raw))
    call c_f_pointer(raw, offsets, [count + 1])
  end subroutine

  !> All received elements (c_f_pointer it to the element type) and how many.
  subroutine domex_inbox_data(inbox, data, elements)
    type(domex_inbox), intent(in) :: inbox
    type(c_ptr), intent(out) :: data
    integer(c_size_t), intent(out) :: elements
    call finish(c_inbox_data(inbox%handle, data, elements))
  end subroutine

  ! ---- decomposition and migration ----------------------------------------

  !> Collective: multisection domains of the box [lo, hi).
  subroutine domex_multisection_create(comm, lo, hi, multisection, divisions, periodic, neighbour_margin, ierr)
    type(domex_comm), intent(in) :: comm
    real(c_double), intent(in) :: lo(3), hi(3)
    type(domex_multisection), intent(inout) :: multisection
    integer, intent(in), optional :: divisions(3)
    logical, intent(in), optional :: periodic(3)
    real(c_double), intent(in), optional :: neighbour_margin
    integer, intent(out), optional :: ierr
    integer(c_int) :: d(3), p(3)
    real(c_double) :: l(3), h(3), margin
    d = 0
    p = 0
    margin = 0
    l = lo
    h = hi
    if (present(divisions)) d = int(divisions, c_int)
    if (present(periodic)) p = merge(1_c_int, 0_c_int, periodic)
    if (present(neighbour_margin)) margin = neighbour_margin
    call finish(c_multisection_create(comm%handle, l, h, d, p, margin, multisection%handle), ierr)
  end subroutine

  subroutine domex_multisection_free(multisection, ierr)
    type(domex_multisection), intent(inout) :: multisection
    integer, intent(out), optional :: ierr
    call finish(c_multisection_free(multisection%handle), ierr)
  end subroutine

  !> Collective: cuts at the quantiles of this rank's particles at (x, y, z):
  !> three arrays, or the components of an array of particles (p%x(1),
  !> p%x(2), p%x(3)): any equal stride works.
  subroutine domex_multisection_rebalance(multisection, x, y, z, weights, ierr)
    type(domex_multisection), intent(in) :: multisection
    real(c_double), intent(in), target :: x(:), y(:), z(:)
    real(c_double), intent(in), target, contiguous, optional :: weights(:)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: w
    integer(c_size_t) :: stride
    stride = stride_of(x)
    if (size(y) /= size(x) .or. size(z) /= size(x) .or. stride_of(y) /= stride .or. stride_of(z) /= stride) &
      stride = 0  ! the C layer reports it on every rank
    w = c_null_ptr
    if (present(weights)) w = first(weights)
    call finish(c_multisection_rebalance(multisection%handle, int(size(x), c_size_t), first(x), first(y), first(z), &
                                         stride, w), ierr)
  end subroutine

  !> The 0-based rank owning `position`.
  integer function domex_multisection_owner(multisection, position) result(rank)
    type(domex_multisection), intent(in) :: multisection
    real(c_double), intent(in) :: position(3)
    real(c_double) :: p(3)
    integer(c_int) :: value
    p = position
    call finish(c_multisection_owner(multisection%handle, p, value))
    rank = int(value)
  end function

  !> Box [lo, hi) of a rank's domain.
  subroutine domex_multisection_box(multisection, rank, lo, hi)
    type(domex_multisection), intent(in) :: multisection
    integer, intent(in) :: rank
    real(c_double), intent(out) :: lo(3), hi(3)
    call finish(c_multisection_box(multisection%handle, int(rank, c_int), lo, hi))
  end subroutine

  !> Collective: who goes where, from positions as in domex_multisection_rebalance.
  subroutine domex_migration_create(comm, multisection, x, y, z, migration, algorithm, ierr)
    type(domex_comm), intent(in) :: comm
    type(domex_multisection), intent(in) :: multisection
    real(c_double), intent(in), target :: x(:), y(:), z(:)
    type(domex_migration), intent(inout) :: migration
    character(len=*), intent(in), optional :: algorithm
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: stride
    stride = stride_of(x)
    if (size(y) /= size(x) .or. size(z) /= size(x) .or. stride_of(y) /= stride .or. stride_of(z) /= stride) &
      stride = 0
    if (present(algorithm)) then
      call finish(c_migration_create(comm%handle, multisection%handle, int(size(x), c_size_t), first(x), first(y), &
                                     first(z), stride, c_string(algorithm), migration%handle), ierr)
    else
      call finish(c_migration_create(comm%handle, multisection%handle, int(size(x), c_size_t), first(x), first(y), &
                                     first(z), stride, c_string("automatic"), migration%handle), ierr)
    end if
  end subroutine

  subroutine domex_migration_free(migration, ierr)
    type(domex_migration), intent(inout) :: migration
    integer, intent(out), optional :: ierr
    call finish(c_migration_free(migration%handle), ierr)
  end subroutine

  integer function domex_migration_leaving(migration) result(leaving)
    type(domex_migration), intent(in) :: migration
    integer(c_size_t) :: value
    call finish(c_migration_leaving(migration%handle, value))
    leaving = int(value)
  end function

  !> Collective: moves `count` records of element_size bytes at `records`
  !> (c_loc of the particle array) into `moved`: those that stay, then the
  !> arrivals by source. domex_buffer_data gives them back.
  subroutine domex_migrate(migration, count, element_size, records, moved, ierr)
    type(domex_migration), intent(in) :: migration
    integer, intent(in) :: count
    integer(c_size_t), intent(in) :: element_size
    type(c_ptr), intent(in) :: records
    type(domex_buffer), intent(in) :: moved
    integer, intent(out), optional :: ierr
    call finish(c_migrate(migration%handle, int(count, c_size_t), element_size, records, moved%handle), ierr)
  end subroutine

  subroutine domex_buffer_create(buffer, ierr)
    type(domex_buffer), intent(inout) :: buffer
    integer, intent(out), optional :: ierr
    call finish(c_buffer_create(buffer%handle), ierr)
  end subroutine

  subroutine domex_buffer_free(buffer, ierr)
    type(domex_buffer), intent(inout) :: buffer
    integer, intent(out), optional :: ierr
    call finish(c_buffer_free(buffer%handle), ierr)
  end subroutine

  !> The buffer's bytes (c_f_pointer them to the element type).
  subroutine domex_buffer_data(buffer, data, bytes)
    type(domex_buffer), intent(in) :: buffer
    type(c_ptr), intent(out) :: data
    integer(c_size_t), intent(out) :: bytes
    call finish(c_buffer_data(buffer%handle, data, bytes))
  end subroutine

  ! ---- Cartesian halo -----------------------------------------------------

  !> Collective: global_cells block-distributed over a grid of ranks (dims,
  !> default chosen by domex), `depth` ghost layers on every side, 26
  !> neighbours (default) or 6. Fields are f(1-depth:n(1)+depth, ...) with
  !> n from domex_halo_local_cells.
  subroutine domex_halo_create(comm, global_cells, depth, halo, dims, periodic, neighbours, ierr)
    type(domex_comm), intent(in) :: comm
    integer, intent(in) :: global_cells(3), depth
    type(domex_halo), intent(inout) :: halo
    integer, intent(in), optional :: dims(3), neighbours
    logical, intent(in), optional :: periodic(3)
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: cells(3)
    integer(c_int) :: d(3), p(3), n
    cells = int(max(global_cells, 0), c_size_t)
    d = 0
    p = 0
    n = 26
    if (present(dims)) d = int(dims, c_int)
    if (present(periodic)) p = merge(1_c_int, 0_c_int, periodic)
    if (present(neighbours)) n = int(neighbours, c_int)
    call finish(c_halo_create(comm%handle, cells, d, p, int(depth, c_int), n, halo%handle), ierr)
  end subroutine

  subroutine domex_halo_free(halo, ierr)
    type(domex_halo), intent(inout) :: halo
    integer, intent(out), optional :: ierr
    call finish(c_halo_free(halo%handle), ierr)
  end subroutine

  !> Cells this rank owns per axis.
  function domex_halo_local_cells(halo) result(cells)
    type(domex_halo), intent(in) :: halo
    integer :: cells(3)
    integer(c_size_t) :: values(3)
    call finish(c_halo_sizes(halo%handle, values))
    cells = int(values)
  end function

  !> 0-based global index of this rank's first owned cell per axis.
  function domex_halo_offset(halo) result(offset)
    type(domex_halo), intent(in) :: halo
    integer :: offset(3)
    integer(c_size_t) :: values(3)
    call finish(c_halo_offset(halo%handle, values))
    offset = int(values)
  end function

  function domex_halo_dims(halo) result(dims)
    type(domex_halo), intent(in) :: halo
    integer :: dims(3)
    integer(c_int) :: values(3)
    call finish(c_halo_dims(halo%handle, values))
    dims = int(values)
  end function

  function domex_halo_coords(halo) result(coords)
    type(domex_halo), intent(in) :: halo
    integer :: coords(3)
    integer(c_int) :: values(3)
    call finish(c_halo_coords(halo%handle, values))
    coords = int(values)
  end function

  !> 0-based rank of the neighbour in `direction` (each -1, 0, 1), -1 if none.
  integer function domex_halo_neighbour(halo, direction) result(rank)
    type(domex_halo), intent(in) :: halo
    integer, intent(in) :: direction(3)
    integer(c_int) :: d(3), value
    d = int(direction, c_int)
    call finish(c_halo_neighbour(halo%handle, d, value))
    rank = int(value)
  end function

  !> A field's address, or NULL if it has the wrong number of elements (the
  !> C layer then reports it here and on the neighbours).
  function field_address(halo, f) result(address)
    type(domex_halo), intent(in) :: halo
    real(c_double), intent(in), target, contiguous :: f(:, :, :)
    type(c_ptr) :: address
    integer(c_size_t) :: cells
    call finish(c_halo_cells(halo%handle, cells))
    address = c_null_ptr
    if (size(f, kind=c_size_t) == cells) address = c_loc(f)
  end function

  subroutine halo_exchange_3d(halo, f1, f2, f3, f4, f5, f6, f7, f8, ierr)
    type(domex_halo), intent(in) :: halo
    real(c_double), intent(inout), target, contiguous :: f1(:, :, :)
    real(c_double), intent(inout), target, contiguous, optional :: f2(:, :, :), f3(:, :, :), f4(:, :, :), &
                                                                   f5(:, :, :), f6(:, :, :), f7(:, :, :), f8(:, :, :)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(8)
    integer(c_int) :: count
    count = 1
    fields(1) = field_address(halo, f1)
    if (present(f2)) call add(f2)
    if (present(f3)) call add(f3)
    if (present(f4)) call add(f4)
    if (present(f5)) call add(f5)
    if (present(f6)) call add(f6)
    if (present(f7)) call add(f7)
    if (present(f8)) call add(f8)
    call finish(c_halo_exchange_doubles(halo%handle, count, fields), ierr)
  contains
    subroutine add(f)
      real(c_double), intent(in), target, contiguous :: f(:, :, :)
      count = count + 1
      fields(count) = field_address(halo, f)
    end subroutine
  end subroutine

  subroutine halo_exchange_4d(halo, f, ierr)
    type(domex_halo), intent(in) :: halo
    real(c_double), intent(inout), target, contiguous :: f(:, :, :, :)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(max(size(f, 4), 1))
    integer :: m
    fields = c_null_ptr
    do m = 1, size(f, 4)
      fields(m) = field_address(halo, f(:, :, :, m))
    end do
    call finish(c_halo_exchange_doubles(halo%handle, int(size(f, 4), c_int), fields), ierr)
  end subroutine

  subroutine halo_reverse_sum_3d(halo, f1, f2, f3, f4, f5, f6, f7, f8, ierr)
    type(domex_halo), intent(in) :: halo
    real(c_double), intent(inout), target, contiguous :: f1(:, :, :)
    real(c_double), intent(inout), target, contiguous, optional :: f2(:, :, :), f3(:, :, :), f4(:, :, :), &
                                                                   f5(:, :, :), f6(:, :, :), f7(:, :, :), f8(:, :, :)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(8)
    integer(c_int) :: count
    count = 1
    fields(1) = field_address(halo, f1)
    if (present(f2)) call add(f2)
    if (present(f3)) call add(f3)
    if (present(f4)) call add(f4)
    if (present(f5)) call add(f5)
    if (present(f6)) call add(f6)
    if (present(f7)) call add(f7)
    if (present(f8)) call add(f8)
    call finish(c_halo_reverse_sum_doubles(halo%handle, count, fields), ierr)
  contains
    subroutine add(f)
      real(c_double), intent(in), target, contiguous :: f(:, :, :)
      count = count + 1
      fields(count) = field_address(halo, f)
    end subroutine
  end subroutine

  subroutine halo_reverse_sum_4d(halo, f, ierr)
    type(domex_halo), intent(in) :: halo
    real(c_double), intent(inout), target, contiguous :: f(:, :, :, :)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(max(size(f, 4), 1))
    integer :: m
    fields = c_null_ptr
    do m = 1, size(f, 4)
      fields(m) = field_address(halo, f(:, :, :, m))
    end do
    call finish(c_halo_reverse_sum_doubles(halo%handle, int(size(f, 4), c_int), fields), ierr)
  end subroutine

  ! ---- profile ------------------------------------------------------------

  subroutine domex_profile_create(profile, ierr)
    type(domex_profile), intent(inout) :: profile
    integer, intent(out), optional :: ierr
    call finish(c_profile_create(profile%handle), ierr)
  end subroutine

  subroutine domex_profile_free(profile, ierr)
    type(domex_profile), intent(inout) :: profile
    integer, intent(out), optional :: ierr
    call finish(c_profile_free(profile%handle), ierr)
  end subroutine

  subroutine domex_profile_begin(profile, phase, ierr)
    type(domex_profile), intent(in) :: profile
    character(len=*), intent(in) :: phase
    integer, intent(out), optional :: ierr
    call finish(c_profile_begin(profile%handle, c_string(phase)), ierr)
  end subroutine

  subroutine domex_profile_end(profile, phase, ierr)
    type(domex_profile), intent(in) :: profile
    character(len=*), intent(in) :: phase
    integer, intent(out), optional :: ierr
    call finish(c_profile_end(profile%handle, c_string(phase)), ierr)
  end subroutine

  subroutine domex_profile_add(profile, phase, seconds, ierr)
    type(domex_profile), intent(in) :: profile
    character(len=*), intent(in) :: phase
    real(c_double), intent(in) :: seconds
    integer, intent(out), optional :: ierr
    call finish(c_profile_add(profile%handle, c_string(phase), seconds), ierr)
  end subroutine

  real(c_double) function domex_profile_seconds(profile, phase) result(seconds)
    type(domex_profile), intent(in) :: profile
    character(len=*), intent(in) :: phase
    call finish(c_profile_seconds(profile%handle, c_string(phase), seconds))
  end function

  !> Collective: rank 0 prints min/avg/max over the ranks.
  subroutine domex_profile_print(profile, comm, title, ierr)
    type(domex_profile), intent(in) :: profile
    type(domex_comm), intent(in) :: comm
    character(len=*), intent(in) :: title
    integer, intent(out), optional :: ierr
    flush(6)
    call finish(c_profile_print(profile%handle, comm%handle, c_string(title)), ierr)
  end subroutine


  ! ---- bucket decomposition and ghost particles ---------------------------

  !> Collective: the box [lo, hi) cut into counts(1) x counts(2) x counts(3)
  !> uniform buckets, runs of them along a Morton curve per rank.
  subroutine domex_buckets_create(comm, lo, hi, counts, buckets, periodic, ierr)
    type(domex_comm), intent(in) :: comm
    real(c_double), intent(in) :: lo(3), hi(3)
    integer, intent(in) :: counts(3)
    type(domex_buckets), intent(inout) :: buckets
    logical, intent(in), optional :: periodic(3)
    integer, intent(out), optional :: ierr
    integer(c_int) :: n(3), p(3)
    real(c_double) :: l(3), h(3)
    n = int(counts, c_int)
    p = 0
    l = lo
    h = hi
    if (present(periodic)) p = merge(1_c_int, 0_c_int, periodic)
    call finish(c_buckets_create(comm%handle, l, h, n, p, buckets%handle), ierr)
  end subroutine

  subroutine domex_buckets_free(buckets, ierr)
    type(domex_buckets), intent(inout) :: buckets
    integer, intent(out), optional :: ierr
    call finish(c_buckets_free(buckets%handle), ierr)
  end subroutine

  !> Collective: runs of equal cost for this rank's particles at (x, y, z)
  !> (arrays or strided components, as domex_multisection_rebalance).
  subroutine domex_buckets_rebalance(buckets, x, y, z, weights, ierr)
    type(domex_buckets), intent(in) :: buckets
    real(c_double), intent(in), target :: x(:), y(:), z(:)
    real(c_double), intent(in), target, contiguous, optional :: weights(:)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: w
    w = c_null_ptr
    if (present(weights)) w = first(weights)
    call finish(c_buckets_rebalance(buckets%handle, int(size(x), c_size_t), first(x), first(y), first(z), &
                                    positions_stride(x, y, z), w), ierr)
  end subroutine

  !> The 0-based rank owning `position`.
  integer function domex_buckets_owner(buckets, position) result(rank)
    type(domex_buckets), intent(in) :: buckets
    real(c_double), intent(in) :: position(3)
    real(c_double) :: p(3)
    integer(c_int) :: value
    p = position
    call finish(c_buckets_owner(buckets%handle, p, value))
    rank = int(value)
  end function

  !> The common stride of x, y, z in bytes, or 0 (an error of the C layer,
  !> on every rank) when their sizes or strides differ.
  function positions_stride(x, y, z) result(stride)
    real(c_double), intent(in), target :: x(:), y(:), z(:)
    integer(c_size_t) :: stride
    stride = stride_of(x)
    if (size(y) /= size(x) .or. size(z) /= size(x) .or. stride_of(y) /= stride .or. stride_of(z) /= stride) &
      stride = 0
  end function

  !> Collective: the ghosts of a multisection within `cutoff` (interaction
  !> cutoff + skin) for this rank's particles at (x, y, z).
  subroutine ghost_create_multisection(comm, decomposition, x, y, z, cutoff, ghost, ierr)
    type(domex_comm), intent(in) :: comm
    type(domex_multisection), intent(in) :: decomposition
    real(c_double), intent(in), target :: x(:), y(:), z(:)
    real(c_double), intent(in) :: cutoff
    type(domex_ghost), intent(inout) :: ghost
    integer, intent(out), optional :: ierr
    call finish(c_ghost_create_multisection(comm%handle, decomposition%handle, int(size(x), c_size_t), first(x), &
                                            first(y), first(z), positions_stride(x, y, z), cutoff, ghost%handle), ierr)
  end subroutine

  !> Collective: the same for a bucket decomposition.
  subroutine ghost_create_buckets(comm, decomposition, x, y, z, cutoff, ghost, ierr)
    type(domex_comm), intent(in) :: comm
    type(domex_buckets), intent(in) :: decomposition
    real(c_double), intent(in), target :: x(:), y(:), z(:)
    real(c_double), intent(in) :: cutoff
    type(domex_ghost), intent(inout) :: ghost
    integer, intent(out), optional :: ierr
    call finish(c_ghost_create_buckets(comm%handle, decomposition%handle, int(size(x), c_size_t), first(x), &
                                       first(y), first(z), positions_stride(x, y, z), cutoff, ghost%handle), ierr)
  end subroutine

  subroutine domex_ghost_free(ghost, ierr)
    type(domex_ghost), intent(inout) :: ghost
    integer, intent(out), optional :: ierr
    call finish(c_ghost_free(ghost%handle), ierr)
  end subroutine

  !> Collective: the plan again for new owned positions (the decomposition's
  !> current domains); on error the previous plan stays.
  subroutine domex_ghost_rebuild(ghost, x, y, z, ierr)
    type(domex_ghost), intent(in) :: ghost
    real(c_double), intent(in), target :: x(:), y(:), z(:)
    integer, intent(out), optional :: ierr
    call finish(c_ghost_rebuild(ghost%handle, int(size(x), c_size_t), first(x), first(y), first(z), &
                                positions_stride(x, y, z)), ierr)
  end subroutine

  !> Owned particles (field entries 1 .. local_count).
  integer function domex_ghost_local_count(ghost) result(count)
    type(domex_ghost), intent(in) :: ghost
    integer(c_size_t) :: value
    call finish(c_ghost_local_count(ghost%handle, value))
    count = int(value)
  end function

  !> Ghosts (field entries local_count + 1 .. size).
  integer function domex_ghost_count(ghost) result(count)
    type(domex_ghost), intent(in) :: ghost
    integer(c_size_t) :: value
    call finish(c_ghost_count(ghost%handle, value))
    count = int(value)
  end function

  !> Entries of every field: owned + ghosts.
  integer function domex_ghost_size(ghost) result(entries)
    type(domex_ghost), intent(in) :: ghost
    integer(c_size_t) :: value
    call finish(c_ghost_size(ghost%handle, value))
    entries = int(value)
  end function

  !> Ghost positions at the build, shifted: positions(:, g) is ghost g (field
  !> entry local_count + g); valid until the next rebuild or free.
  subroutine domex_ghost_positions(ghost, positions)
    type(domex_ghost), intent(in) :: ghost
    real(c_double), pointer, intent(out) :: positions(:, :)
    type(c_ptr) :: raw
    real(c_double), target, save :: empty(3, 0)
    call finish(c_ghost_positions(ghost%handle, raw))
    if (c_associated(raw)) then
      call c_f_pointer(raw, positions, [3, domex_ghost_count(ghost)])
    else
      positions => empty
    end if
  end subroutine

  !> Collective: owned values into the ghosts of up to eight double fields of
  !> domex_ghost_size() entries, in one message per rank. A field of another
  !> size is an error on every rank.
  subroutine domex_ghost_update(ghost, f1, f2, f3, f4, f5, f6, f7, f8, ierr)
    type(domex_ghost), intent(in) :: ghost
    real(c_double), intent(inout), target, contiguous :: f1(:)
    real(c_double), intent(inout), target, contiguous, optional :: f2(:), f3(:), f4(:), f5(:), f6(:), f7(:), f8(:)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(8)
    integer(c_size_t) :: sizes(8)
    integer(c_intptr_t) :: offsets(8)
    integer(c_int) :: count
    integer :: entries
    entries = domex_ghost_size(ghost)
    offsets = -1
    count = 0
    call add(f1)
    if (present(f2)) call add(f2)
    if (present(f3)) call add(f3)
    if (present(f4)) call add(f4)
    if (present(f5)) call add(f5)
    if (present(f6)) call add(f6)
    if (present(f7)) call add(f7)
    if (present(f8)) call add(f8)
    call finish(c_ghost_update(ghost%handle, count, fields, sizes, offsets), ierr)
  contains
    subroutine add(f)
      real(c_double), intent(in), target, contiguous :: f(:)
      count = count + 1
      fields(count) = first(f)
      sizes(count) = c_sizeof(0.0_c_double)
      if (size(f) /= entries) sizes(count) = 0  ! reported by the C layer on every rank
    end subroutine
  end subroutine

  subroutine ghost_update_xyz(ghost, x, y, z, ierr)
    type(domex_ghost), intent(in) :: ghost
    real(c_double), intent(inout), target :: x(:), y(:), z(:)
    integer, intent(out), optional :: ierr
    integer(c_size_t) :: stride
    integer :: entries
    entries = domex_ghost_size(ghost)
    stride = positions_stride(x, y, z)
    if (size(x) /= entries) stride = 0
    call finish(c_ghost_update_positions(ghost%handle, first(x), first(y), first(z), stride), ierr)
  end subroutine

  subroutine ghost_update_points(ghost, r, ierr)
    type(domex_ghost), intent(in) :: ghost
    real(c_double), intent(inout), target, contiguous :: r(:, :)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(1)
    integer(c_size_t) :: sizes(1)
    integer(c_intptr_t) :: offsets(1)
    integer :: entries
    entries = domex_ghost_size(ghost)
    fields(1) = c_null_ptr
    if (size(r) > 0) fields(1) = c_loc(r)
    sizes(1) = 3 * c_sizeof(0.0_c_double)
    if (size(r, 1) /= 3 .or. size(r, 2) /= entries) sizes(1) = 0
    offsets(1) = 0
    call finish(c_ghost_update(ghost%handle, 1_c_int, fields, sizes, offsets), ierr)
  end subroutine

  !> Collective: owned records into the ghosts of an array of bind(c) records
  !> of domex_ghost_size() entries: `records` = c_loc(p), element_size =
  !> c_sizeof(p(1)); position_offset (optional) is the byte offset of a
  !> real(c_double) :: x(3) member that gets the periodic shift.
  subroutine domex_ghost_update_records(ghost, records, element_size, position_offset, ierr)
    type(domex_ghost), intent(in) :: ghost
    type(c_ptr), intent(in) :: records
    integer(c_size_t), intent(in) :: element_size
    integer(c_size_t), intent(in), optional :: position_offset
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(1)
    integer(c_size_t) :: sizes(1)
    integer(c_intptr_t) :: offsets(1)
    fields(1) = records
    sizes(1) = element_size
    offsets(1) = -1
    if (present(position_offset)) offsets(1) = int(position_offset, c_intptr_t)
    call finish(c_ghost_update(ghost%handle, 1_c_int, fields, sizes, offsets), ierr)
  end subroutine

  !> Collective: adds the ghost entries of up to eight double fields into
  !> their owners' entries (half neighbour lists), in a fixed order: the same
  !> bits at every run. Ghost entries are left as they were.
  subroutine domex_ghost_reverse_sum(ghost, f1, f2, f3, f4, f5, f6, f7, f8, ierr)
    type(domex_ghost), intent(in) :: ghost
    real(c_double), intent(inout), target, contiguous :: f1(:)
    real(c_double), intent(inout), target, contiguous, optional :: f2(:), f3(:), f4(:), f5(:), f6(:), f7(:), f8(:)
    integer, intent(out), optional :: ierr
    type(c_ptr) :: fields(8)
    integer(c_int) :: count
    integer :: entries
    entries = domex_ghost_size(ghost)
    count = 0
    call add(f1)
    if (present(f2)) call add(f2)
    if (present(f3)) call add(f3)
    if (present(f4)) call add(f4)
    if (present(f5)) call add(f5)
    if (present(f6)) call add(f6)
    if (present(f7)) call add(f7)
    if (present(f8)) call add(f8)
    call finish(c_ghost_reverse_sum_doubles(ghost%handle, count, fields), ierr)
  contains
    subroutine add(f)
      real(c_double), intent(in), target, contiguous :: f(:)
      count = count + 1
      fields(count) = first(f)
      if (size(f) /= entries) fields(count) = c_null_ptr  ! reported by the C layer (with entries)
    end subroutine
  end subroutine

end module domex
