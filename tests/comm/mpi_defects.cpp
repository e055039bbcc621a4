// SPDX-License-Identifier: BSD-3-Clause
// The table of known MPI defects: the library is recognised, the osc/rdma
// window collision is detected on Open MPI < 5.0 and not on MPICH, and
// window_collision_risk() marks exactly the communicators that share a node
// with processes of the job outside them.

#include <domex/comm/mpi_defects.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using domex::MpiDefectId;
using Family = domex::MpiLibrary::Family;

TEST(MpiDefects, ParsesTheLibraryVersionStrings) {
  const auto open_mpi =
      domex::parse_mpi_library("Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022");
  EXPECT_EQ(open_mpi.family, Family::open_mpi);
  EXPECT_EQ(open_mpi.major, 4);
  EXPECT_EQ(open_mpi.minor, 1);
  EXPECT_EQ(open_mpi.release, 4);
  const auto mpich = domex::parse_mpi_library("MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n");
  EXPECT_EQ(mpich.family, Family::mpich);
  EXPECT_EQ(mpich.major, 4);
  EXPECT_EQ(mpich.minor, 0);
  EXPECT_EQ(mpich.release, 2);
  EXPECT_EQ(mpich.description, "MPICH Version:\t4.0.2");
  EXPECT_EQ(domex::parse_mpi_library("Open MPI v5.0.3, package: Open MPI").major, 5);
  EXPECT_EQ(domex::parse_mpi_library("Intel(R) MPI Library 2021.6").family, Family::other);
}

TEST(MpiDefects, TheTableHasEveryDefectInOrderWithItsTicketAndTest) {
  const auto defects = domex::known_mpi_defects();
  ASSERT_EQ(defects.size(), 3u);
  EXPECT_EQ(defects[0].id, MpiDefectId::ompi_osc_rdma_segment_name);
  EXPECT_EQ(defects[1].id, MpiDefectId::mpich_win_allocate_put);
  EXPECT_EQ(defects[2].id, MpiDefectId::nbx_ibarrier_after_2e24);
  EXPECT_NE(defects[0].ticket.find("open-mpi/ompi#9492"), std::string::npos);
  EXPECT_NE(defects[2].ticket.find("dealii/dealii#14405"), std::string::npos);
  for (const auto& defect : defects) {
    EXPECT_FALSE(defect.symptom.empty());
    EXPECT_FALSE(defect.workaround.empty());
    EXPECT_FALSE(defect.test.empty());
  }
}

/// The reproducer's condition (Open MPI < 5.0, osc/rdma selectable) is
/// detected on Open MPI 4.1 and not on MPICH; OMPI_MCA_osc lifts it.
TEST(MpiDefects, TheWindowCollisionIsDetectedOnOpenMpi4AndNotOnMpich) {
  const auto& library = domex::mpi_library();
  if (std::getenv("OMPI_MCA_osc")) GTEST_SKIP() << "OMPI_MCA_osc is set: the test needs the default";
  const bool affected = domex::affects_this_process(MpiDefectId::ompi_osc_rdma_segment_name);
#if defined(OPEN_MPI)
  EXPECT_EQ(library.family, Family::open_mpi) << library.description;
  EXPECT_EQ(affected, library.major < 5) << library.description;
  ::setenv("OMPI_MCA_osc", "ucx", 1);
  EXPECT_FALSE(domex::affects_this_process(MpiDefectId::ompi_osc_rdma_segment_name));
  ::setenv("OMPI_MCA_osc", "^rdma", 1);
  EXPECT_FALSE(domex::affects_this_process(MpiDefectId::ompi_osc_rdma_segment_name));
  ::setenv("OMPI_MCA_osc", "sm,rdma", 1);
  EXPECT_EQ(domex::affects_this_process(MpiDefectId::ompi_osc_rdma_segment_name), library.major < 5);
  ::unsetenv("OMPI_MCA_osc");
#elif defined(MPICH)
  EXPECT_EQ(library.family, Family::mpich) << library.description;
  EXPECT_FALSE(affected);
  EXPECT_FALSE(domex::affects_this_process(MpiDefectId::nbx_ibarrier_after_2e24));
#endif
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::printf("%s: window collision %s\n", library.description.c_str(), affected ? "possible" : "not possible");
}

/// Every process of this job shares one node here (tests run on one
/// machine): the whole job is safe; a proper sub-communicator is at risk
/// exactly where the library has the defect, and every rank agrees.
TEST(MpiDefects, OnlyCommunicatorsThatLeaveOutNodeMatesAreAtRisk) {
  const bool affected = domex::affects_this_process(MpiDefectId::ompi_osc_rdma_segment_name);
  domex::Comm world{MPI_COMM_WORLD};
  EXPECT_FALSE(domex::window_collision_risk(world).has_value());
  EXPECT_FALSE(domex::window_collision_risk(world).has_value());  // cached: no second collective
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm half = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  {
    domex::Comm group{half};
    const auto& risk = domex::window_collision_risk(group);
    EXPECT_EQ(risk.has_value(), affected && size > 1);
    if (risk) {
      EXPECT_NE(risk->find("open-mpi/ompi#9492"), std::string::npos) << *risk;
    }
    EXPECT_EQ(group.allreduce(risk ? 1 : 0, MPI_MAX), risk ? 1 : 0);  // the same verdict on every rank
  }
  MPI_Comm_free(&half);
}

}  // namespace
