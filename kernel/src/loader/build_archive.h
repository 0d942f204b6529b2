// SPDX-License-Identifier: Apache-2.0
// File: kernel/src/loader/build_archive.h
//
// A build file: one plugin set packed as a POSIX ustar archive (readable with `tar tf`), flat
// (no directories), holding molt-build.json first and then the libraries in name order. Written
// deterministically: every header's time, owner and group are 0, modes 0644, so the same files
// give the same bytes. Read strictly: only regular files with plain names (no '/', no "..", at
// most 100 bytes), each once, checksums verified, sizes within the caps; anything else (a
// directory, a link, a device, trailing garbage) is refused naming the member and the fix.
//
// Thread safety: none needed (functions of their arguments and the file system).
#ifndef MOLT_KERNEL_LOADER_BUILD_ARCHIVE_H_
#define MOLT_KERNEL_LOADER_BUILD_ARCHIVE_H_

#include <molt/kernel/status.h>

#include <cstdint>
#include <string>
#include <vector>

namespace molt::kernel::loader {

// One member to write: `bytes` when `source` is empty, else the contents of the file `source`.
struct ArchiveInput {
  std::string name;
  std::string source;
  std::string bytes;
};

// Writes `inputs`, in this order, to `path` (replaced atomically: written beside, then renamed).
Status WriteArchive(const std::string& path, const std::vector<ArchiveInput>& inputs);

// One member read: its name, and where its bytes are in the file.
struct ArchiveMember {
  std::string name;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
};

struct ArchiveLimits {
  std::uint64_t max_total = 1ull << 30;  // all members together
  std::size_t max_members = 256;
};

// The members of the archive at `path`, in archive order, every header checked.
Result<std::vector<ArchiveMember>> ReadArchive(const std::string& path,
                                               const ArchiveLimits& limits = {});

// The bytes of `member` (at most `max` of them).
Result<std::string> ReadMember(const std::string& path, const ArchiveMember& member,
                               std::uint64_t max = 1u << 20);

// Unpacks every member of the archive at `path` into `dir` (created; it must not exist), each
// file flushed to disk; the directory is removed again on failure.
Status ExtractArchive(const std::string& path, const std::string& dir,
                      const ArchiveLimits& limits = {});

// A build file checked whole (a build arriving at a registry): read strictly, unpacked into a
// scratch directory under `scratch` (removed again), its manifest read as ReadBuild() reads one,
// and every library's SHA-256 compared with the manifest's. Returns the manifest's bytes, or
// the first problem, naming the member and the fix.
Result<std::string> VerifyBuildFile(const std::string& path, const std::string& scratch,
                                    const ArchiveLimits& limits = {});

// Whether `path` names a build file (a regular file whose name ends in ".molt").
bool IsBuildFile(const std::string& path);

// Where a build is read from (ReadBuild): `path` itself for a plugin directory or one library;
// for a build file, a private directory under `scratch` it is unpacked into, removed with this
// object (its libraries are copied again when they load).
class BuildSource {
 public:
  static Result<BuildSource> Open(const std::string& path, const std::string& scratch);
  BuildSource(BuildSource&& other) noexcept;
  BuildSource& operator=(BuildSource&&) = delete;
  BuildSource(const BuildSource&) = delete;
  ~BuildSource();
  const std::string& dir() const { return dir_; }

 private:
  BuildSource(std::string dir, bool owned) : dir_(std::move(dir)), owned_(owned) {}
  std::string dir_;
  bool owned_ = false;
};

}  // namespace molt::kernel::loader

#endif  // MOLT_KERNEL_LOADER_BUILD_ARCHIVE_H_
