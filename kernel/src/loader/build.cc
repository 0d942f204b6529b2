// SPDX-License-Identifier: Apache-2.0
// Build: a plugin directory and its manifest.
#include "kernel/src/loader/build.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <system_error>
#include <type_traits>

namespace molt::kernel::loader {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::string Hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr);
  }
  void Update(const void* data, std::size_t size) { EVP_DigestUpdate(ctx_.get(), data, size); }
  std::string Hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest, &n);
    return loader::Hex(digest, n);
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

bool IsSha256(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The manifest's string field `key` of `o`, or "" when absent or not a string.
std::string Text(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

Status ReadManifest(const fs::path& path, Build& build) {
  const std::string where = "build manifest \"" + path.string() + "\": ";
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) {
    return Status::IoError(where + "cannot be read");
  }
  std::error_code ec;
  json::value doc = json::parse(text, ec);
  if (ec || !doc.is_object()) {
    return Status::InvalidArgument(where + "is not a JSON object" +
                                   (ec ? " (" + ec.message() + ")" : std::string()));
  }
  const json::object& root = doc.as_object();
  build.id = Text(root, "build");
  if (build.id.empty() || build.id.size() > 64 ||
      build.id.find_first_of("# \t\r\n") != std::string::npos) {
    return Status::InvalidArgument(where +
                                   "\"build\" must be the build id: 1..64 characters, no '#' "
                                   "or spaces");
  }
  const json::value* plugins = root.if_contains("plugins");
  if (plugins == nullptr || !plugins->is_array()) {
    return Status::InvalidArgument(where + "\"plugins\" must be an array of {file, sha256, ...}");
  }
  for (const json::value& v : plugins->as_array()) {
    const json::object* o = v.if_object();
    const std::string file = o != nullptr ? Text(*o, "file") : "";
    if (file.empty() || file.find('/') != std::string::npos) {
      return Status::InvalidArgument(where + "every plugin needs \"file\": a file name in " +
                                     build.dir);
    }
    BuildEntry e{Text(*o, "sha256"), Text(*o, "name"), Text(*o, "version"), Text(*o, "kind")};
    if (!IsSha256(e.sha256)) {
      return Status::InvalidArgument(where + "\"" + file +
                                     "\": \"sha256\" must be 64 lowercase hex digits "
                                     "(sha256sum prints them)");
    }
    if (!e.kind.empty() && e.kind != "service" && e.kind != "controller") {
      return Status::InvalidArgument(where + "\"" + file +
                                     "\": \"kind\" is \"service\" or \"controller\"");
    }
    if (!build.entries.emplace(file, std::move(e)).second) {
      return Status::InvalidArgument(where + "\"" + file + "\" is listed twice");
    }
  }
  if (const json::value* health = root.if_contains("health"); health != nullptr) {
    const json::object* h = health->if_object();
    auto number = [&](std::string_view key, double lo, double hi, auto* out) {
      const json::value* v = h != nullptr ? h->if_contains(key) : nullptr;
      if (v == nullptr) {
        return;
      }
      const double d = v->is_int64()    ? static_cast<double>(v->as_int64())
                       : v->is_double() ? v->as_double()
                                        : -1;
      if (d >= lo && d <= hi) {
        *out = static_cast<std::remove_pointer_t<decltype(out)>>(d);
      } else {
        build.warnings.push_back(where + "\"health\": \"" + std::string(key) + "\" must be " +
                                 std::to_string(static_cast<int>(lo)) + " to " +
                                 std::to_string(static_cast<int>(hi)) + ": the default applies");
      }
    };
    number("errors", kHealthErrorsMin, kHealthErrorsMax, &build.health_errors);
    number("window_seconds", kHealthWindowMinSeconds, kHealthWindowMaxSeconds,
           &build.health_window_seconds);
  }
  build.has_manifest = true;
  return Status::Ok();
}

}  // namespace

void AddHealth(boost::json::object& manifest, std::uint32_t errors, double window_seconds) {
  if (errors == 0 && window_seconds == 0) {
    return;
  }
  json::object health;
  if (errors != 0) {
    health["errors"] = errors;
  }
  if (window_seconds != 0) {
    health["window_seconds"] = window_seconds;
  }
  manifest["health"] = std::move(health);
}

Status WriteBuild(const std::string& dir, const std::string& build_id,
                  const std::vector<BuildFile>& files, std::uint32_t health_errors,
                  double health_window_seconds) {
  std::error_code ec;
  if (!fs::create_directories(dir, ec)) {
    return Status::IoError("cannot create \"" + dir +
                           "\": " + (ec ? ec.message() : std::string("it exists")));
  }
  json::array plugins;
  for (const BuildFile& f : files) {
    const fs::path to = fs::path(dir) / f.file;
    fs::create_hard_link(f.source, to, ec);  // the same bytes, nothing copied
    if (ec && !fs::copy_file(f.source, to, ec)) {
      return Status::IoError("cannot copy \"" + f.source + "\" to \"" + to.string() +
                             "\": " + ec.message());
    }
    MOLT_RETURN_IF_ERROR(SyncPath(to.string()));
    MOLT_ASSIGN_OR_RETURN(std::string sha, Sha256File(to.string()));
    json::object entry{{"file", f.file}, {"sha256", sha}};
    for (const auto& [key, value] :
         {std::pair{"name", &f.entry.name}, std::pair{"version", &f.entry.version},
          std::pair{"kind", &f.entry.kind}}) {
      if (!value->empty()) {
        entry[key] = *value;
      }
    }
    plugins.push_back(std::move(entry));
  }
  json::object manifest{{"build", build_id}, {"plugins", std::move(plugins)}};
  AddHealth(manifest, health_errors, health_window_seconds);
  const fs::path path = fs::path(dir) / kBuildManifest;
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << json::serialize(manifest) << "\n";
    out.flush();
    if (!out) {
      return Status::IoError("cannot write " + path.string());
    }
  }
  MOLT_RETURN_IF_ERROR(SyncPath(path.string()));
  return SyncPath(dir);
}

Status InstallDirectory(const std::string& staged, const std::string& dir) {
  std::error_code ec;
  const bool replace = fs::exists(dir, ec);
  const int rc = replace
                     ? ::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE)
                     : ::rename(staged.c_str(), dir.c_str());
  if (rc != 0) {
    return Status::IoError("cannot move \"" + staged + "\" to \"" + dir +
                           "\": " + std::strerror(errno));
  }
  Status synced = SyncPath(fs::path(dir).parent_path().string());
  if (replace) {
    fs::remove_all(staged, ec);  // the old copy, exchanged out
  }
  return synced;
}

Status SyncPath(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::IoError("cannot open \"" + path + "\" to sync it: " + std::strerror(errno));
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) {
    return Status::IoError("cannot sync \"" + path + "\" to disk: " + std::strerror(err));
  }
  return Status::Ok();
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 sha;
  sha.Update(bytes.data(), bytes.size());
  return sha.Hex();
}

Result<std::string> Sha256File(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::IoError("\"" + path + "\" cannot be read");
  }
  Sha256 sha;
  char buffer[1 << 16];
  while (in) {
    in.read(buffer, sizeof(buffer));
    sha.Update(buffer, static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    return Status::IoError("\"" + path + "\" cannot be read");
  }
  return sha.Hex();
}

Result<Build> ReadBuild(const std::string& dir) {
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) {  // one library: a build of one file, named by its stamp
    Build build;
    build.dir = fs::path(dir).parent_path().string();
    build.files = {dir};
    Sha256 sha;
    const std::string stamp =
        fs::path(dir).filename().string() + '\0' + std::to_string(fs::file_size(dir, ec)) + '\0' +
        std::to_string(fs::last_write_time(dir, ec).time_since_epoch().count());
    sha.Update(stamp.data(), stamp.size());
    build.id = "local-" + sha.Hex().substr(0, 8);
    return build;
  }
  if (!fs::is_directory(dir, ec)) {
    return Status::NotFound("plugin directory \"" + dir +
                            "\" does not exist: pass the directory holding the plugin .so files");
  }
  Build build;
  build.dir = dir;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".so") {
      build.files.push_back(e.path().string());
    }
  }
  if (ec) {
    return Status::IoError("plugin directory \"" + dir + "\" cannot be read: " + ec.message());
  }
  std::sort(build.files.begin(), build.files.end());
  const fs::path manifest = fs::path(dir) / kBuildManifest;
  if (fs::exists(manifest, ec)) {
    MOLT_RETURN_IF_ERROR(ReadManifest(manifest, build));
    std::set<std::string> present;
    for (const std::string& f : build.files) {
      const std::string name = fs::path(f).filename().string();
      present.insert(name);
      if (build.entries.count(name) == 0) {
        return Status::InvalidArgument("plugin file \"" + f + "\" is not listed in " +
                                       manifest.string() + ": add it, or remove the file");
      }
    }
    for (const auto& [name, entry] : build.entries) {
      if (present.count(name) == 0) {
        return Status::NotFound(manifest.string() + " lists \"" + name + "\", which is not in " +
                                dir);
      }
    }
    return build;
  }
  // No manifest: the id is derived from each file's name, size and modification time (hashing
  // the contents would cost a reload ~20 ms of the kernel thread for nothing checked).
  Sha256 sha;
  for (const std::string& f : build.files) {
    const auto size = fs::file_size(f, ec);
    const auto mtime = fs::last_write_time(f, ec);
    if (ec) {
      return Status::IoError("plugin file \"" + f + "\" cannot be read: " + ec.message());
    }
    const std::string stamp = fs::path(f).filename().string() + '\0' + std::to_string(size) + '\0' +
                              std::to_string(mtime.time_since_epoch().count()) + '\0';
    sha.Update(stamp.data(), stamp.size());
  }
  build.id = "local-" + sha.Hex().substr(0, 8);
  return build;
}

}  // namespace molt::kernel::loader
