// SPDX-License-Identifier: BSD-3-Clause
#pragma once
// What the applications share: their main(), files that appear complete or
// not at all, and an output folder tried for real before a run starts.

#include <filesystem>
#include <string>
#include <string_view>

namespace domex {
class Comm;
}

namespace domex::apps {

/// Collective: rank 0 creates `folder` (and its parents); a failure there is
/// a domex::Error on every rank.
void create_output_folder(const Comm& comm, const std::filesystem::path& folder);

/// Collective: a warning line (rank 0, stderr) when the ranks on one node
/// times `threads` exceed its cores and OpenMP threads spin while they wait
/// (OMP_WAIT_POLICY not passive): such a run is many times slower than it
/// needs to be (np 8 x 2 threads on 2 cores: 20x). Returns whether it warned.
bool warn_if_oversubscribed(const Comm& comm, std::string_view app, int threads);

/// Writes `bytes` to `path`.part, then renames it to `path`: a reader never
/// sees a half-written file. Throws domex::Error naming the path.
void write_file(const std::filesystem::path& path, std::string_view bytes);

/// Why `folder` cannot be used for output ("" if it can). Tried for real: the
/// folder is created and a probe file written and removed, because a
/// permission check alone passes as root on read-only or pseudo file systems
/// (/proc, a read-only mount) where the run would fail later. Folders the
/// probe created are removed again, so the check writes nothing.
[[nodiscard]] std::string output_problem(const std::filesystem::path& folder);

/// Throws domex::Error "<app>: <what>": an application's own error (a bad
/// option, a state that blew up) with the application's name as its one
/// prefix, not under domex's "domex: rank R: <call>:" as well. Such errors are
/// the same on every rank (checked collectively), so no rank is named.
[[noreturn]] void fail_app(std::string_view app, std::string_view what);

/// The main() of an MPI application: MPI_Init, `run`, MPI_Finalize, and an
/// exception that escapes `run` (a bug: expected errors are handled there)
/// printed before MPI_Abort: a domex::Error as it is (it names its origin),
/// any other as "<name>: rank R: <what>". Returns run's status.
int main_of(const char* name, int argc, char** argv, int (*run)(int, char**));

}  // namespace domex::apps
