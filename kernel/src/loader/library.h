// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/library.h
//
// Library: one plugin shared library in the process. Load() copies the file to a fresh private
// path (so the same file can be resident twice, once per generation) and inspects its exports
// (StagedLibrary: file system work only, any thread), then opens it with RTLD_NOW | RTLD_LOCAL
// through Boost.DLL and validates the descriptor its entry symbol returns (Open). Every refusal is
// one line naming the file, the cause and the fix. Unload() closes the library and checks it really
// left the process; one that cannot (STB_GNU_UNIQUE symbols, DF_1_NODELETE) is kept mapped and
// reported as retired, never crashed.
//
// Thread safety: REQUIRES external synchronization.
#ifndef MOLT_KERNEL_LOADER_LIBRARY_H_
#define MOLT_KERNEL_LOADER_LIBRARY_H_

#include <molt/kernel/status.h>
#include <molt/molt.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace molt::kernel::loader {

// An `expected_kind` that takes a service or a controller (a build packs both: molt build).
inline constexpr std::int32_t kAnyPluginKind = 0;

// Checks a plugin's descriptor against this host's ABI (versions, size, name, semantic version,
// kind, dependencies, interfaces) and returns it as this host's molt_plugin_info: a descriptor
// from an older release is copied into a zeroed current one (abi/struct_size.h), so fields it
// does not have read as 0. `file` names the library in the error.
Result<molt_plugin_info> ReadDescriptor(const molt_plugin_info* raw, std::string_view file,
                                        std::int32_t expected_kind);

// True for "MAJOR.MINOR.PATCH" with optional "-prerelease" and "+build" (semver.org 2.0.0).
bool IsSemanticVersion(std::string_view version);

// The first half of Library::Load(): `source` copied to its private path, the copy's hash
// checked and its exports inspected. It touches only the file system, so it may be made on any
// thread (a swap's build is staged off the kernel thread: PluginHost); opening it (dlopen, the
// descriptor) is the half that must run where the plugin will. Removes its copy when it is
// destroyed unopened.
class StagedLibrary {
 public:
  // Copies `source` to `copy_path` (which must not exist yet). With `expected_sha256` (a build
  // manifest's), the copy must have that hash.
  static Result<StagedLibrary> Stage(const std::string& source, const std::string& copy_path,
                                     std::string_view expected_sha256 = {});
  StagedLibrary(StagedLibrary&& other) noexcept;
  StagedLibrary& operator=(StagedLibrary&&) = delete;
  StagedLibrary(const StagedLibrary&) = delete;
  ~StagedLibrary();
  const std::string& source() const { return source_; }
  const std::string& copy() const { return copy_; }

 private:
  friend class Library;
  StagedLibrary() = default;
  std::string source_;
  std::string copy_;  // "" once opened (or moved from): the copy is the Library's
  std::string unload_blocker_;
};

class Library {
 public:
  // Loads `source` through a private copy at `copy_path` (which must not exist yet). With
  // `expected_sha256` (a build manifest's), the copy that is opened must have that hash.
  // StagedLibrary::Stage() then Open().
  static Result<std::unique_ptr<Library>> Load(const std::string& source,
                                               const std::string& copy_path,
                                               std::int32_t expected_kind,
                                               std::string_view expected_sha256 = {});
  // Opens a staged copy (RTLD_NOW | RTLD_LOCAL) and validates its descriptor. On failure the
  // copy is removed.
  static Result<std::unique_ptr<Library>> Open(StagedLibrary staged, std::int32_t expected_kind);
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library();

  // The descriptor as ReadDescriptor returned it; its pointers point into the library.
  const molt_plugin_info& info() const { return info_; }
  const std::string& source() const { return source_; }
  const std::string& copy() const { return copy_; }
  // Why this library can never leave the process; empty when it can.
  const std::string& unload_blocker() const { return unload_blocker_; }
  // Records why it cannot leave (its instance pinned it: abi::PluginInstance::Pin).
  void set_unload_blocker(std::string why) { unload_blocker_ = std::move(why); }

  // Closes the library and removes its copy. Returns true when the library left the process;
  // false (with a warning naming the reason) when the dynamic linker keeps it mapped: retired.
  bool Unload();
  bool loaded() const { return loaded_; }

 private:
  struct Handle;
  Library() = default;

  std::unique_ptr<Handle> handle_;
  molt_plugin_info info_{};
  std::string source_;
  std::string copy_;
  std::string unload_blocker_;
  bool loaded_ = false;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_LIBRARY_H_
