// SPDX-License-Identifier: Apache-2.0
// Build files: a flat ustar archive, written deterministically, read strictly.
#include "kernel/src/loader/build_archive.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>
#include <utility>

#include "kernel/src/loader/build.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kBlock = 512;
using Block = std::array<char, kBlock>;

// Field offsets and widths of a ustar header.
constexpr std::size_t kName = 0, kNameLen = 100;
constexpr std::size_t kMode = 100, kUid = 108, kGid = 116, kSize = 124, kSizeLen = 12;
constexpr std::size_t kMtime = 136, kChecksum = 148, kTypeflag = 156, kMagic = 257;
constexpr std::size_t kPrefix = 345, kPrefixLen = 155;

// `value` in octal, zero-padded to width - 1 digits and NUL-terminated.
void Octal(Block& b, std::size_t at, std::size_t width, std::uint64_t value) {
  for (std::size_t i = width - 1; i-- > 0;) {
    b[at + i] = static_cast<char>('0' + (value & 7));
    value >>= 3;
  }
  b[at + width - 1] = '\0';
}

unsigned Checksum(const Block& b) {
  unsigned sum = 0;
  for (std::size_t i = 0; i < kBlock; ++i) {
    const bool field = i >= kChecksum && i < kChecksum + 8;
    sum += field ? static_cast<unsigned>(' ') : static_cast<unsigned char>(b[i]);
  }
  return sum;
}

Block Header(const std::string& name, std::uint64_t size) {
  Block b{};
  std::memcpy(b.data() + kName, name.data(), name.size());
  Octal(b, kMode, 8, 0644);
  Octal(b, kUid, 8, 0);
  Octal(b, kGid, 8, 0);
  Octal(b, kSize, kSizeLen, size);
  Octal(b, kMtime, 12, 0);
  b[kTypeflag] = '0';
  std::memcpy(b.data() + kMagic,
              "ustar\0"
              "00",
              8);
  Octal(b, kChecksum, 7, Checksum(b));  // six digits, NUL, then the space left from Checksum
  b[kChecksum + 7] = ' ';
  return b;
}

// A plain member name: what a flat build holds.
Status CheckName(const std::string& name, const std::string& where) {
  if (name.empty() || name.size() > kNameLen || name == "." || name == ".." ||
      name.find('/') != std::string::npos || name.find('\0') != std::string::npos) {
    return Status::InvalidArgument(where + ": member name \"" + name +
                                   "\" is not a plain file name of 1 to 100 bytes (a build is "
                                   "flat: no directories)");
  }
  return Status::Ok();
}

// The octal number in a header field; false when it is not one.
bool ParseOctal(const char* field, std::size_t width, std::uint64_t* out) {
  std::uint64_t v = 0;
  std::size_t i = 0;
  while (i < width && field[i] == ' ') {
    ++i;
  }
  bool digits = false;
  for (; i < width && field[i] >= '0' && field[i] <= '7'; ++i) {
    if (v > (UINT64_MAX >> 3)) {
      return false;
    }
    v = (v << 3) | static_cast<std::uint64_t>(field[i] - '0');
    digits = true;
  }
  for (; i < width; ++i) {
    if (field[i] != '\0' && field[i] != ' ') {
      return false;
    }
  }
  *out = v;
  return digits;
}

}  // namespace

Status WriteArchive(const std::string& path, const std::vector<ArchiveInput>& inputs) {
  std::set<std::string> names;
  for (const ArchiveInput& in : inputs) {
    MOLT_RETURN_IF_ERROR(CheckName(in.name, "build file \"" + path + "\""));
    if (!names.insert(in.name).second) {
      return Status::InvalidArgument("build file \"" + path + "\": \"" + in.name +
                                     "\" is named twice");
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return Status::IoError("cannot write \"" + tmp + "\": " + std::strerror(errno));
    }
    const Block zero{};
    for (const ArchiveInput& in : inputs) {
      std::string bytes = in.bytes;
      if (!in.source.empty()) {
        std::ifstream src(in.source, std::ios::binary);
        if (!src) {
          return Status::IoError("cannot read \"" + in.source + "\"");
        }
        bytes.assign(std::istreambuf_iterator<char>(src), std::istreambuf_iterator<char>());
        if (src.bad()) {
          return Status::IoError("cannot read \"" + in.source + "\"");
        }
      }
      const Block h = Header(in.name, bytes.size());
      out.write(h.data(), kBlock);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      out.write(zero.data(),
                static_cast<std::streamsize>((kBlock - bytes.size() % kBlock) % kBlock));
    }
    out.write(zero.data(), kBlock);
    out.write(zero.data(), kBlock);
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return Status::IoError("cannot write \"" + tmp + "\" (disk full?)");
    }
  }
  MOLT_RETURN_IF_ERROR(SyncPath(tmp));
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return Status::IoError("cannot move \"" + tmp + "\" to \"" + path + "\": " + ec.message());
  }
  return Status::Ok();
}

Result<std::vector<ArchiveMember>> ReadArchive(const std::string& path,
                                               const ArchiveLimits& limits) {
  const std::string where = "build file \"" + path + "\"";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::NotFound(where + " cannot be opened: " + std::strerror(errno));
  }
  std::error_code ec;
  const std::uint64_t file_size = fs::file_size(path, ec);
  if (ec) {
    return Status::IoError(where + " cannot be read: " + ec.message());
  }
  std::vector<ArchiveMember> members;
  std::set<std::string> names;
  std::uint64_t at = 0;
  std::uint64_t total = 0;
  for (;;) {
    Block b;
    if (!in.read(b.data(), kBlock)) {
      return Status::InvalidArgument(where +
                                     " ends before its end-of-archive blocks: it is cut "
                                     "short or not a build file (make it with molt build)");
    }
    at += kBlock;
    if (std::all_of(b.begin(), b.end(), [](char c) { return c == '\0'; })) {
      // The end: nothing but zero blocks may follow.
      for (char c; in.get(c);) {
        if (c != '\0') {
          return Status::InvalidArgument(where + " has data after its end-of-archive block");
        }
      }
      break;
    }
    const std::string member_where = where + ", member " + std::to_string(members.size() + 1);
    std::uint64_t checksum = 0;
    if (!ParseOctal(b.data() + kChecksum, 8, &checksum) || checksum != Checksum(b)) {
      return Status::InvalidArgument(member_where +
                                     ": the header checksum does not match (a damaged or "
                                     "tampered file, or not a tar archive)");
    }
    if (std::memcmp(b.data() + kMagic, "ustar", 5) != 0) {
      return Status::InvalidArgument(member_where + ": not a ustar header");
    }
    const std::string name(b.data() + kName, strnlen(b.data() + kName, kNameLen));
    if (strnlen(b.data() + kPrefix, kPrefixLen) != 0) {
      return Status::InvalidArgument(member_where + ": \"" + name +
                                     "\" is in a directory (a build is flat)");
    }
    const char type = b[kTypeflag];
    if (type != '0' && type != '\0') {
      return Status::InvalidArgument(member_where + ": \"" + name +
                                     "\" is not a regular file (type '" + std::string(1, type) +
                                     "'): a build holds only its manifest and libraries");
    }
    MOLT_RETURN_IF_ERROR(CheckName(name, where));
    if (!names.insert(name).second) {
      return Status::InvalidArgument(where + ": \"" + name + "\" is in it twice");
    }
    std::uint64_t size = 0;
    if (!ParseOctal(b.data() + kSize, kSizeLen, &size)) {
      return Status::InvalidArgument(member_where + ": \"" + name + "\" has no valid size");
    }
    total += size;
    if (members.size() >= limits.max_members || total > limits.max_total) {
      return Status::InvalidArgument(where + " holds more than " +
                                     std::to_string(limits.max_members) + " files or " +
                                     std::to_string(limits.max_total) + " bytes: refused");
    }
    const std::uint64_t padded = (size + kBlock - 1) / kBlock * kBlock;
    if (at + padded > file_size) {
      return Status::InvalidArgument(where + ": \"" + name + "\" is cut short (" +
                                     std::to_string(size) + " bytes announced)");
    }
    members.push_back({name, at, size});
    at += padded;
    in.seekg(static_cast<std::streamoff>(at));
  }
  return members;
}

Result<std::string> ReadMember(const std::string& path, const ArchiveMember& member,
                               std::uint64_t max) {
  if (member.size > max) {
    return Status::InvalidArgument("build file \"" + path + "\": \"" + member.name + "\" is " +
                                   std::to_string(member.size) + " bytes, more than " +
                                   std::to_string(max));
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes(member.size, '\0');
  in.seekg(static_cast<std::streamoff>(member.offset));
  if (!in.read(bytes.data(), static_cast<std::streamsize>(member.size))) {
    return Status::IoError("build file \"" + path + "\": \"" + member.name + "\" cannot be read");
  }
  return bytes;
}

Status ExtractArchive(const std::string& path, const std::string& dir,
                      const ArchiveLimits& limits) {
  MOLT_ASSIGN_OR_RETURN(std::vector<ArchiveMember> members, ReadArchive(path, limits));
  std::error_code ec;
  if (!fs::create_directories(dir, ec)) {
    return Status::IoError("cannot create \"" + dir +
                           "\": " + (ec ? ec.message() : std::string("it exists")));
  }
  auto fail = [&](Status s) {
    fs::remove_all(dir, ec);
    return s;
  };
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 16);
  for (const ArchiveMember& m : members) {
    const std::string to = (fs::path(dir) / m.name).string();
    std::ofstream out(to, std::ios::binary | std::ios::trunc);
    in.seekg(static_cast<std::streamoff>(m.offset));
    for (std::uint64_t left = m.size; left > 0;) {
      const auto n = static_cast<std::streamsize>(std::min<std::uint64_t>(left, buffer.size()));
      if (!in.read(buffer.data(), n) || !out.write(buffer.data(), n)) {
        return fail(Status::IoError("cannot unpack \"" + m.name + "\" from \"" + path + "\" to \"" +
                                    to + "\" (disk full?)"));
      }
      left -= static_cast<std::uint64_t>(n);
    }
    out.close();
    if (Status s = SyncPath(to); !s.ok()) {
      return fail(std::move(s));
    }
  }
  if (Status s = SyncPath(dir); !s.ok()) {
    return fail(std::move(s));
  }
  return Status::Ok();
}

bool IsBuildFile(const std::string& path) {
  std::error_code ec;
  return path.size() > 5 && path.ends_with(".molt") && fs::is_regular_file(path, ec);
}

Result<BuildSource> BuildSource::Open(const std::string& path, const std::string& scratch) {
  if (!IsBuildFile(path)) {
    return BuildSource(path, false);
  }
  static std::atomic<std::uint64_t> next{1};
  const std::string dir = (fs::path(scratch) / ("unpacked-" + std::to_string(::getpid()) + "-" +
                                                std::to_string(next.fetch_add(1))))
                              .string();
  std::error_code ec;
  fs::create_directories(scratch, ec);
  fs::remove_all(dir, ec);
  MOLT_RETURN_IF_ERROR(ExtractArchive(path, dir));
  return BuildSource(dir, true);
}

Result<std::string> VerifyBuildFile(const std::string& path, const std::string& scratch,
                                    const ArchiveLimits& limits) {
  MOLT_ASSIGN_OR_RETURN(std::vector<ArchiveMember> members, ReadArchive(path, limits));
  if (members.empty() || members.front().name != kBuildManifest) {
    return Status::InvalidArgument("\"" + path +
                                   "\" is not a build file: its first member must be " +
                                   kBuildManifest + " (make one with `molt build DIR`)");
  }
  MOLT_ASSIGN_OR_RETURN(std::string manifest, ReadMember(path, members.front()));
  MOLT_ASSIGN_OR_RETURN(BuildSource unpacked, BuildSource::Open(path, scratch));
  MOLT_ASSIGN_OR_RETURN(Build build, ReadBuild(unpacked.dir()));
  if (build.files.empty()) {
    return Status::InvalidArgument("build file \"" + path + "\" holds no plugin library");
  }
  for (const std::string& file : build.files) {
    const std::string name = fs::path(file).filename().string();
    MOLT_ASSIGN_OR_RETURN(std::string sha, Sha256File(file));
    if (sha != build.entries.at(name).sha256) {
      return Status::InvalidArgument("build file \"" + path + "\": the SHA-256 of " + name +
                                     " is " + sha + ", but its manifest says " +
                                     build.entries.at(name).sha256 +
                                     ": the file was altered after `molt build` (build it again)");
    }
  }
  return manifest;
}

BuildSource::BuildSource(BuildSource&& other) noexcept
    : dir_(std::move(other.dir_)), owned_(std::exchange(other.owned_, false)) {}

BuildSource::~BuildSource() {
  if (owned_) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

}  // namespace molt::kernel::loader
