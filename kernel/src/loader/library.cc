// SPDX-License-Identifier: Apache-2.0
// Library: copy, inspect, dlopen (Boost.DLL), validate, unload and verify.
#include "kernel/src/loader/library.h"

#include <dlfcn.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <system_error>
#include <utility>

#include "kernel/src/abi/struct_size.h"
#include "kernel/src/core/logger.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/elf_inspect.h"

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;

bool IsValidName(std::string_view name) {
  if (name.empty() || name.size() > 64) {
    return false;
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) {
      return false;
    }
  }
  return true;
}

bool IsNumber(std::string_view s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) {
    return false;
  }
  for (char c : s) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  return true;
}

bool IsIdentifiers(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  std::size_t start = 0;
  while (start <= s.size()) {
    const std::size_t dot = std::min(s.find('.', start), s.size());
    const std::string_view part = s.substr(start, dot - start);
    if (part.empty()) {
      return false;
    }
    for (char c : part) {
      const bool ok =
          (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
      if (!ok) {
        return false;
      }
    }
    start = dot + 1;
  }
  return true;
}

std::string Abi(std::uint32_t v) {
  return std::to_string(MOLT_ABI_MAJOR_OF(v)) + "." + std::to_string(MOLT_ABI_MINOR_OF(v));
}

}  // namespace

bool IsSemanticVersion(std::string_view v) {
  if (v.size() > 64) {
    return false;
  }
  const std::size_t plus = v.find('+');
  if (plus != std::string_view::npos) {
    if (!IsIdentifiers(v.substr(plus + 1))) {
      return false;
    }
    v = v.substr(0, plus);
  }
  const std::size_t dash = v.find('-');
  if (dash != std::string_view::npos) {
    if (!IsIdentifiers(v.substr(dash + 1))) {
      return false;
    }
    v = v.substr(0, dash);
  }
  const std::size_t a = v.find('.');
  const std::size_t b = a == std::string_view::npos ? a : v.find('.', a + 1);
  if (a == std::string_view::npos || b == std::string_view::npos) {
    return false;
  }
  return IsNumber(v.substr(0, a)) && IsNumber(v.substr(a + 1, b - a - 1)) &&
         IsNumber(v.substr(b + 1));
}

Result<molt_plugin_info> ReadDescriptor(const molt_plugin_info* raw, std::string_view file,
                                        std::int32_t expected_kind) {
  const std::string where = "plugin file \"" + std::string(file) + "\": ";
  if (raw == nullptr) {
    return Status::InvalidArgument(where +
                                   "molt_plugin_entry() returned NULL: return the address "
                                   "of a static molt_plugin_info");
  }
  const std::uint32_t major = MOLT_ABI_MAJOR_OF(raw->abi_version);
  const std::uint32_t minor = MOLT_ABI_MINOR_OF(raw->abi_version);
  if (major != MOLT_ABI_VERSION_MAJOR) {
    return Status::InvalidArgument(where + "built for ABI " + Abi(raw->abi_version) +
                                   " but this host speaks ABI " + Abi(MOLT_ABI_VERSION_CURRENT) +
                                   ": rebuild the plugin against the Molt " +
                                   std::to_string(MOLT_ABI_VERSION_MAJOR) + ".x SDK");
  }
  if (minor > MOLT_ABI_VERSION_MINOR) {
    return Status::InvalidArgument(where + "needs ABI " + Abi(raw->abi_version) +
                                   " but this host provides ABI " + Abi(MOLT_ABI_VERSION_CURRENT) +
                                   ": upgrade the host, or rebuild the plugin against the " +
                                   Abi(MOLT_ABI_VERSION_CURRENT) + " SDK");
  }
  // The descriptor of any release since 1.0 is accepted; fields it does not have read as 0.
  Result<molt_plugin_info> copy = abi::ReadSized(*raw);
  if (!copy.ok()) {
    return copy.status().Prefixed("plugin file \"" + std::string(file) + "\"");
  }
  const molt_plugin_info* info = &copy.value();
  if (info->name == nullptr || info->name[0] == '\0') {
    return Status::InvalidArgument(where + "descriptor has no name: set molt_plugin_info.name");
  }
  if (!IsValidName(info->name)) {
    return Status::InvalidArgument(where + "name \"" + std::string(info->name) +
                                   "\" is invalid: use 1 to 64 of [A-Za-z0-9_.-]");
  }
  const std::string who =
      "plugin \"" + std::string(info->name) + "\" (" + std::string(file) + "): ";
  if (info->version == nullptr || info->version[0] == '\0') {
    return Status::InvalidArgument(who +
                                   "descriptor has no version: set molt_plugin_info.version "
                                   "to a semantic version such as \"1.0.0\"");
  }
  if (!IsSemanticVersion(info->version)) {
    return Status::InvalidArgument(who + "version \"" + std::string(info->version) +
                                   "\" is not a semantic version (MAJOR.MINOR.PATCH, e.g. "
                                   "\"1.4.2\")");
  }
  if (info->kind != MOLT_PLUGIN_KIND_SERVICE && info->kind != MOLT_PLUGIN_KIND_CONTROLLER) {
    return Status::InvalidArgument(who + "kind " + std::to_string(info->kind) +
                                   " is neither MOLT_PLUGIN_KIND_SERVICE nor "
                                   "MOLT_PLUGIN_KIND_CONTROLLER");
  }
  if (expected_kind != kAnyPluginKind && info->kind != expected_kind) {
    return Status::InvalidArgument(
        who + "is a " + (info->kind == MOLT_PLUGIN_KIND_SERVICE ? "service" : "controller") +
        ", but this host loads " +
        (expected_kind == MOLT_PLUGIN_KIND_SERVICE ? "services" : "controllers") +
        " only: move it to the other side's plugin directory");
  }
  if (info->init == nullptr) {
    return Status::InvalidArgument(who +
                                   "descriptor has no init callback: set "
                                   "molt_plugin_info.init");
  }
  if (info->dependency_count > 0 && info->dependencies == nullptr) {
    return Status::InvalidArgument(who + "dependency_count is " +
                                   std::to_string(info->dependency_count) +
                                   " but dependencies is NULL");
  }
  for (std::uint32_t i = 0; i < info->dependency_count; ++i) {
    const char* dep = info->dependencies[i];
    if (dep == nullptr || !IsValidName(dep)) {
      return Status::InvalidArgument(who + "dependency " + std::to_string(i) +
                                     " is not a valid plugin name");
    }
  }
  if (info->interface_count > 0 && info->interfaces == nullptr) {
    return Status::InvalidArgument(who + "interface_count is " +
                                   std::to_string(info->interface_count) +
                                   " but interfaces is NULL");
  }
  for (std::uint32_t i = 0; i < info->interface_count; ++i) {
    const molt_interface_export& e = info->interfaces[i];
    if (e.name == nullptr || !IsValidName(e.name) || e.vtable == nullptr || e.vtable_size == 0) {
      return Status::InvalidArgument(who + "interface " + std::to_string(i) +
                                     " needs a valid name, a vtable and its size");
    }
  }
  return copy;
}

struct Library::Handle {
  boost::dll::shared_library lib;
};

Result<StagedLibrary> StagedLibrary::Stage(const std::string& source, const std::string& copy_path,
                                           std::string_view expected_sha256) {
  const std::string where = "plugin file \"" + source + "\": ";
  std::error_code ec;
  if (!fs::is_regular_file(source, ec)) {
    return Status::NotFound(where + "does not exist or is not a regular file");
  }
  if (!fs::copy_file(source, copy_path, ec)) {
    return Status::IoError(where + "cannot be copied to \"" + copy_path + "\": " + ec.message());
  }
  StagedLibrary staged;  // from here on, a failure removes the copy with `staged`
  staged.source_ = source;
  staged.copy_ = copy_path;
  if (!expected_sha256.empty()) {
    Result<std::string> hash = Sha256File(copy_path);
    if (!hash.ok() || *hash != expected_sha256) {
      return Status::InvalidArgument(
          where + "its SHA-256 is " + (hash.ok() ? *hash : hash.status().message()) + ", but " +
          kBuildManifest + " says " + std::string(expected_sha256) +
          ": the file changed after the build was made; rebuild the manifest or restore the file");
    }
  }

  Result<ElfExports> exports = InspectElf(copy_path, source);
  if (!exports.ok()) {
    return exports.status();
  }
  bool has_entry = false;
  std::vector<std::string> extra;
  for (const std::string& s : exports->symbols) {
    if (s == MOLT_PLUGIN_ENTRY_SYMBOL) {
      has_entry = true;
    } else if (std::find(exports->unique_symbols.begin(), exports->unique_symbols.end(), s) ==
               exports->unique_symbols.end()) {
      extra.push_back(s);
    }
  }
  if (!has_entry) {
    return Status::InvalidArgument(where +
                                   "exports no molt_plugin_entry symbol: define it with "
                                   "MOLT_PLUGIN(...) (molt.hpp) or MOLT_PLUGIN_EXPORT "
                                   "(molt.h) and build with molt_add_plugin()");
  }
  if (!extra.empty()) {
    std::string list;
    for (std::size_t i = 0; i < extra.size() && i < 5; ++i) {
      list += (i ? ", " : "") + extra[i];
    }
    if (extra.size() > 5) {
      list += ", ...";
    }
    return Status::InvalidArgument(where + "exports " + std::to_string(extra.size()) +
                                   " symbols besides molt_plugin_entry (" + list +
                                   "): build it with molt_add_plugin() (hidden visibility and "
                                   "the entry-only export map) or make them static");
  }
  if (!exports->unique_symbols.empty()) {
    staged.unload_blocker_ = "it has STB_GNU_UNIQUE symbols (" + exports->unique_symbols[0] +
                             (exports->unique_symbols.size() > 1 ? ", ..." : "") +
                             "): build with -fno-gnu-unique (molt_add_plugin does)";
  } else if (exports->nodelete) {
    staged.unload_blocker_ = "it is linked with -z nodelete (DF_1_NODELETE)";
  }
  return staged;
}

StagedLibrary::StagedLibrary(StagedLibrary&& other) noexcept
    : source_(std::move(other.source_)),
      copy_(std::exchange(other.copy_, std::string())),
      unload_blocker_(std::move(other.unload_blocker_)) {}

StagedLibrary::~StagedLibrary() {
  if (!copy_.empty()) {
    std::error_code ec;
    fs::remove(copy_, ec);
  }
}

Result<std::unique_ptr<Library>> Library::Load(const std::string& source,
                                               const std::string& copy_path,
                                               std::int32_t expected_kind,
                                               std::string_view expected_sha256) {
  MOLT_ASSIGN_OR_RETURN(StagedLibrary staged,
                        StagedLibrary::Stage(source, copy_path, expected_sha256));
  return Open(std::move(staged), expected_kind);
}

Result<std::unique_ptr<Library>> Library::Open(StagedLibrary staged, std::int32_t expected_kind) {
  const std::string where = "plugin file \"" + staged.source_ + "\": ";
  const std::string source = staged.source_;
  const std::string copy_path = staged.copy_;
  std::unique_ptr<Library> library(new Library());
  library->source_ = source;
  library->copy_ = copy_path;
  library->unload_blocker_ = staged.unload_blocker_;
  std::error_code ec;
  auto remove_copy = [&] { fs::remove(copy_path, ec); };
  staged.copy_.clear();  // the Library's now: removed by remove_copy() or Unload()
  library->handle_ = std::make_unique<Handle>();
  try {
    library->handle_->lib.load(copy_path,
                               boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    remove_copy();
    return Status::InvalidArgument(where + "cannot be loaded: " + e.what());
  }
  library->loaded_ = true;
  const molt_plugin_info* info = nullptr;
  try {
    auto entry = library->handle_->lib.get<const molt_plugin_info*()>(MOLT_PLUGIN_ENTRY_SYMBOL);
    info = entry();
  } catch (const std::exception& e) {
    library->Unload();
    return Status::InvalidArgument(where + "molt_plugin_entry failed: " + e.what());
  }
  Result<molt_plugin_info> descriptor = ReadDescriptor(info, source, expected_kind);
  if (!descriptor.ok()) {
    library->Unload();
    return descriptor.status();
  }
  library->info_ = *descriptor;
  return library;
}

Library::~Library() { Unload(); }

bool Library::Unload() {
  if (!loaded_) {
    return true;
  }
  loaded_ = false;
  const std::string name = info_.name != nullptr ? info_.name : source_;
  // dlclose is harmless for a library that cannot leave (glibc keeps it); whether it really left
  // is asked of the dynamic linker afterwards.
  handle_->lib.unload();
  handle_.reset();
  void* still = ::dlopen(copy_.c_str(), RTLD_NOW | RTLD_NOLOAD);
  const bool gone = still == nullptr;
  if (still != nullptr) {
    ::dlclose(still);
    if (unload_blocker_.empty()) {
      unload_blocker_ = "the dynamic linker kept it after dlclose";
    }
  }
  std::error_code ec;
  std::filesystem::remove(copy_, ec);  // mapped pages survive the unlink
  if (!gone) {
    LogScope("Loader").Warn("plugin \"{}\" ({}) cannot be unloaded: {}; kept mapped as retired",
                            name, source_, unload_blocker_);
  }
  return gone;
}

}  // namespace molt::kernel::loader
