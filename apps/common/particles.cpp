// SPDX-License-Identifier: BSD-3-Clause
#include "particles.hpp"

#include <domex/comm/collective.hpp>
#include <domex/comm/error.hpp>
#include <fmt/format.h>
#include <mpi.h>

#include <climits>
#include <cstddef>
#include <string>
#include <vector>

#include "files.hpp"
#include "hdf5.hpp"

namespace domex::apps {

namespace {

/// The particles on the lower ranks (this rank's first row) and on all ranks;
/// every field checked against this rank's count, on every rank.
struct Rows {
  std::uint64_t before = 0, total = 0, here = 0;
};

Rows rows_of(const Comm& comm, std::string_view app, const ParticleSnapshot& snapshot) {
  Rows rows{.here = snapshot.position.size()};
  collectively(comm, [&] {
    if (snapshot.id.size() != rows.here)
      fail_app(app, fmt::format("snapshot: {} ids for {} particles", snapshot.id.size(), rows.here));
    for (const ParticleField& field : snapshot.fields)
      if ((field.components != 1 && field.components != 3) ||
          field.values.size() != static_cast<std::size_t>(field.components) * rows.here)
        fail_app(app, fmt::format("snapshot: field {} has {} values for {} particles of {} components", field.name,
                                  field.values.size(), rows.here, field.components));
  });
  check_mpi(MPI_Exscan(&rows.here, &rows.before, 1, MPI_UINT64_T, MPI_SUM, comm.get()), "MPI_Exscan");
  if (comm.rank() == 0) rows.before = 0;  // MPI_Exscan leaves rank 0's result undefined
  rows.total = comm.allreduce(rows.here, MPI_SUM);
  return rows;
}

void put_big_endian(std::vector<char>& out, const void* value, std::size_t bytes) {
  const auto* p = static_cast<const char*>(value);
  for (std::size_t b = bytes; b-- > 0;) out.push_back(p[b]);
}

}  // namespace

std::vector<double> components(std::span<const std::array<double, 3>> vectors) {
  std::vector<double> out;
  out.reserve(3 * vectors.size());
  for (const auto& v : vectors) out.insert(out.end(), v.begin(), v.end());
  return out;
}

void write_particles_vtk(const Comm& comm, std::string_view app, const std::filesystem::path& path,
                         const ParticleSnapshot& snapshot) {
  const Rows rows = rows_of(comm, app, snapshot);
  collectively(comm, [&] {
    if (rows.total > static_cast<std::uint64_t>(INT32_MAX))
      fail_app(app, "snapshot: more than 2^31 particles do not fit legacy VTK's int32 cells");
  });
  // Sections: header + this rank's slice of records, in file order.
  struct Section {
    std::string header;
    std::size_t record = 0;
    std::vector<char> data;
  };
  std::vector<Section> sections;
  sections.push_back({fmt::format("# vtk DataFile Version 3.0\n{}\nBINARY\nDATASET UNSTRUCTURED_GRID\nPOINTS {} double\n",
                                  snapshot.title, rows.total),
                      24, {}});
  for (const auto& x : snapshot.position)
    for (double c : x) put_big_endian(sections.back().data, &c, 8);
  sections.push_back({fmt::format("\nCELLS {} {}\n", rows.total, 2 * rows.total), 8, {}});
  for (std::uint64_t i = 0; i < rows.here; ++i) {
    const std::int32_t one = 1, index = static_cast<std::int32_t>(rows.before + i);
    put_big_endian(sections.back().data, &one, 4);
    put_big_endian(sections.back().data, &index, 4);
  }
  sections.push_back({fmt::format("\nCELL_TYPES {}\n", rows.total), 4, {}});
  for (std::uint64_t i = 0; i < rows.here; ++i) {
    const std::int32_t vertex = 1;
    put_big_endian(sections.back().data, &vertex, 4);
  }
  bool point_data = false;
  const auto field_section = [&](const std::string& name, int components) {
    sections.push_back({fmt::format("\n{}{} {} double{}\n", point_data ? "" : fmt::format("POINT_DATA {}\n", rows.total),
                                    components == 3 ? "VECTORS" : "SCALARS", name,
                                    components == 3 ? "" : " 1\nLOOKUP_TABLE default"),
                        8 * static_cast<std::size_t>(components), {}});
    point_data = true;
    return &sections.back().data;
  };
  for (const ParticleField& field : snapshot.fields) {
    std::vector<char>* data = field_section(field.name, field.components);
    for (double v : field.values) put_big_endian(*data, &v, 8);
  }
  std::vector<char>* ids = field_section("id", 1);
  for (std::uint64_t id : snapshot.id) {
    const auto value = static_cast<double>(id);
    put_big_endian(*ids, &value, 8);
  }

  const std::filesystem::path part = path.string() + ".part";
  MPI_File file;
  collectively(comm, [&] {
    check_mpi(MPI_File_open(comm.get(), part.c_str(), MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &file),
              "MPI_File_open " + part.string());
  });
  collectively(comm, [&] {
    MPI_Offset offset = 0;
    for (const Section& section : sections) {
      if (comm.rank() == 0)
        check_mpi(MPI_File_write_at(file, offset, section.header.data(), static_cast<int>(section.header.size()),
                                    MPI_CHAR, MPI_STATUS_IGNORE),
                  "MPI_File_write_at");
      offset += static_cast<MPI_Offset>(section.header.size());
      check_mpi(MPI_File_write_at_all(file, offset + static_cast<MPI_Offset>(rows.before * section.record),
                                      section.data.data(), static_cast<int>(section.data.size()), MPI_CHAR,
                                      MPI_STATUS_IGNORE),
                "MPI_File_write_at_all");
      offset += static_cast<MPI_Offset>(rows.total * section.record);
    }
    if (comm.rank() == 0)
      check_mpi(MPI_File_write_at(file, offset, "\n", 1, MPI_CHAR, MPI_STATUS_IGNORE), "MPI_File_write_at");
  });
  check_mpi(MPI_File_close(&file), "MPI_File_close");
  collectively(comm, [&] {
    if (comm.rank() == 0) std::filesystem::rename(part, path);
  });
}

void write_particles_hdf5(const Comm& comm, std::string_view app, const std::filesystem::path& path,
                          const ParticleSnapshot& snapshot) {
  const Rows rows = rows_of(comm, app, snapshot);
  const std::vector<double> position = components(snapshot.position);
  const std::vector<std::size_t> vectors{rows.total, 3}, vector_start{rows.before, 0}, vector_count{rows.here, 3};
  const std::vector<std::size_t> scalars{rows.total}, scalar_start{rows.before}, scalar_count{rows.here};
  std::vector<hdf5::Dataset> sets{
      {.name = "position", .shape = vectors, .start = vector_start, .count = vector_count,
       .values = std::span<const double>(position)},
      {.name = "id", .shape = scalars, .start = scalar_start, .count = scalar_count, .values = snapshot.id}};
  const std::string h5 = path.filename().string();
  std::string body =
      fmt::format("   <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{}\" NodesPerElement=\"1\"/>\n"
                  "   <Geometry GeometryType=\"XYZ\">\n"
                  "    {}\n"
                  "   </Geometry>\n",
                  rows.total, hdf5::xdmf_item(h5, "position", vectors));
  for (const ParticleField& field : snapshot.fields) {
    const bool vector = field.components == 3;
    sets.push_back({.name = field.name, .shape = vector ? vectors : scalars,
                    .start = vector ? vector_start : scalar_start, .count = vector ? vector_count : scalar_count,
                    .values = field.values});
    body += hdf5::xdmf_attribute(h5, field.name, sets.back().shape, vector);
  }
  body += hdf5::xdmf_attribute(h5, "id", scalars, false, true);
  hdf5::write(comm, path, sets, hdf5::xdmf_document(snapshot.title, snapshot.time, body));
}

}  // namespace domex::apps
