// SPDX-License-Identifier: BSD-3-Clause
#pragma once
/// @file
/// Every public domex header in one include: `#include <domex/domex.hpp>`.
/// Including only the layer you use (e.g. <domex/halo/halo.hpp>) compiles
/// faster.

#include <domex/version.hpp>

#include <domex/comm/collective.hpp>
#include <domex/comm/comm.hpp>
#include <domex/comm/datatype.hpp>
#include <domex/comm/error.hpp>
#include <domex/comm/profile.hpp>
#include <domex/comm/reduce.hpp>

#include <domex/exchange/algorithm.hpp>
#include <domex/exchange/automatic.hpp>
#include <domex/exchange/buffer.hpp>
#include <domex/exchange/cost_model.hpp>
#include <domex/exchange/exchange.hpp>
#include <domex/exchange/plan.hpp>

#include <domex/decompose/box.hpp>
#include <domex/decompose/buckets.hpp>
#include <domex/decompose/grid.hpp>
#include <domex/decompose/multisection.hpp>

#include <domex/migrate/migrate.hpp>
#include <domex/ghost/ghost.hpp>
#include <domex/neighbor/neighbor.hpp>
#include <domex/neighbor/sort.hpp>

#include <domex/halo/cartesian.hpp>
#include <domex/halo/halo.hpp>
#include <domex/halo/lattice.hpp>
#include <domex/tree/kernel.hpp>
#include <domex/tree/morton.hpp>
#include <domex/tree/octree.hpp>
#include <domex/tree/sort.hpp>
#include <domex/tree/tree.hpp>
