// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/build.h
//
// A build: what one generation is loaded from (DESIGN.md §6). For now a directory of plugin
// libraries (*.so) with an optional manifest, molt-build.json:
//
//   {"build": "2026.12.01-3",
//    "plugins": [{"file": "libcounter.so", "sha256": "9f2c...", "name": "counter",
//                 "version": "1.0.0", "kind": "service"}]}
//
// With a manifest, every library of the directory must be listed and every listed one present;
// the loader checks each private copy's SHA-256 before opening it and each descriptor's name,
// version and kind against its entry. Without one the build id is "local-" and the first 8 hex
// digits of a SHA-256 over the files' names, sizes and modification times: rebuilt files get a
// new id, untouched ones keep theirs. Signing and branches come later.
//
// Thread safety: none needed (pure functions).
#ifndef MOLT_KERNEL_LOADER_BUILD_H_
#define MOLT_KERNEL_LOADER_BUILD_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <boost/json/fwd.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace molt::kernel::loader {

inline constexpr char kBuildManifest[] = "molt-build.json";

// The health window's bounds (spec §25), one set for a build's manifest and for moltd's
// configuration (server.health_errors, server.health_window_seconds).
inline constexpr double kHealthErrorsMin = 1;
inline constexpr double kHealthErrorsMax = 100;
inline constexpr double kHealthWindowMinSeconds = 5;
inline constexpr double kHealthWindowMaxSeconds = 300;

// A descriptor's kind as a manifest names it: "service" or "controller".
inline const char* PluginKindText(std::int32_t kind) {
  return kind == MOLT_PLUGIN_KIND_SERVICE ? "service" : "controller";
}

// What the manifest says of one file.
struct BuildEntry {
  std::string sha256;  // 64 lowercase hex digits
  std::string name;
  std::string version;
  std::string kind;  // "service" or "controller"
};

struct Build {
  std::string dir;
  std::string id;
  std::vector<std::string> files;  // the libraries, in name order (paths)
  bool has_manifest = false;
  std::map<std::string, BuildEntry> entries;  // by file name (no directory), manifest only
  // The manifest's health window ("health": {"errors": 1..100, "window_seconds": 5..300}); 0
  // when unset. Out-of-range values are dropped with a line in `warnings`.
  std::uint32_t health_errors = 0;
  double health_window_seconds = 0;
  std::vector<std::string> warnings;
};

// One library of a build being written: `source` goes into the build as `file`, described by
// `entry` (its SHA-256 is computed from the bytes written).
struct BuildFile {
  std::string source;
  std::string file;
  BuildEntry entry;
};

// Writes a build into `dir` (created; it must not exist): each file (hard-linked from its source
// when they share a file system, else copied) and a molt-build.json naming `build_id`, each
// file's SHA-256, name, version and kind, and the health window when set (not 0). Everything is
// flushed to disk (fsync) before it returns: a build loadable as it was, after a crash too.
Status WriteBuild(const std::string& dir, const std::string& build_id,
                  const std::vector<BuildFile>& files, std::uint32_t health_errors = 0,
                  double health_window_seconds = 0);

// Adds a manifest's "health" object to `manifest`: the settings that are set (not 0), nothing
// when neither is.
void AddHealth(boost::json::object& manifest, std::uint32_t errors, double window_seconds);

// Makes the complete directory `staged` the directory `dir` in one step (rename(2), or
// renameat2's RENAME_EXCHANGE when `dir` exists, whose old copy is then removed), and syncs their
// parent: at every moment, across a crash too, `dir` is the old copy or the new one, never
// neither. Both must be on one file system.
Status InstallDirectory(const std::string& staged, const std::string& dir);

// Reads `dir`: its libraries and its manifest, if any. Every problem is named with its fix. A
// path to one library is a build of that file alone.
Result<Build> ReadBuild(const std::string& dir);

// The SHA-256 of a file's bytes, or of `bytes`, as 64 lowercase hex digits.
Result<std::string> Sha256File(const std::string& path);
std::string Sha256Hex(std::string_view bytes);

// fsync(2) of a file or a directory: its bytes, or its entries, on disk.
Status SyncPath(const std::string& path);

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_BUILD_H_
