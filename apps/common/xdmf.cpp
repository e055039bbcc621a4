// SPDX-License-Identifier: BSD-3-Clause
// XDMF 3 sidecars of the HDF5 snapshots and the --snapshot-format check
// (text only: built with or without HDF5).
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include "files.hpp"
#include "hdf5.hpp"

namespace domex::apps::hdf5 {

void check_snapshot_format(std::string_view app, std::string_view format, std::string_view first) {
  if (format != first && format != "hdf5")
    fail_app(app, fmt::format("--snapshot-format {}: must be {} or hdf5", format, first));
  if (format == "hdf5" && !available())
    fail_app(app, fmt::format("--snapshot-format hdf5: this {} was built without parallel HDF5 for its MPI (Debian: "
                              "libhdf5-openmpi-dev, from DOMEX_WITH_HDF5=1 source scripts/setup.sh, or "
                              "libhdf5-mpich-dev; then configure again){}",
                              app, first == "none" ? "" : fmt::format(", or use --snapshot-format {}", first)));
}

std::string xdmf_item(std::string_view h5_file, std::string_view name, std::span<const std::size_t> shape,
                      bool is_uint64) {
  return fmt::format("<DataItem Dimensions=\"{}\" NumberType=\"{}\" Precision=\"8\" Format=\"HDF\">{}:/{}</DataItem>",
                     fmt::join(shape, " "), is_uint64 ? "Int" : "Float", h5_file, name);
}

std::string xdmf_attribute(std::string_view h5_file, std::string_view name, std::span<const std::size_t> shape,
                           bool vector, bool is_uint64) {
  return fmt::format(
      "   <Attribute Name=\"{}\" AttributeType=\"{}\" Center=\"Node\">\n"
      "    {}\n"
      "   </Attribute>\n",
      name, vector ? "Vector" : "Scalar", xdmf_item(h5_file, name, shape, is_uint64));
}

std::string xdmf_document(std::string_view grid, double time, std::string_view body) {
  return fmt::format(
      "<?xml version=\"1.0\" ?>\n"
      "<Xdmf Version=\"3.0\">\n"
      " <Domain>\n"
      "  <Grid Name=\"{}\" GridType=\"Uniform\">\n"
      "   <Time Value=\"{:.17g}\"/>\n"
      "{}"
      "  </Grid>\n"
      " </Domain>\n"
      "</Xdmf>\n",
      grid, time, body);
}

}  // namespace domex::apps::hdf5
