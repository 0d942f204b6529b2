// SPDX-License-Identifier: Apache-2.0
// File: tests/kernel/deploy/test_builds.h
//
// Build files for the registry's tests: a manifest and stand-in libraries (bytes, not plugins:
// a registry verifies a build's archive and hashes, it never opens a library), packed as
// `molt build` packs them.
#ifndef MOLT_TESTS_KERNEL_DEPLOY_TEST_BUILDS_H_
#define MOLT_TESTS_KERNEL_DEPLOY_TEST_BUILDS_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_archive.h"

namespace molt::kernel::deploy::test {

// A scratch directory named after the running test, removed with the object.
class TestDir {
 public:
  TestDir() {
    path_ = ::testing::TempDir() + "molt_deploy_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
            std::to_string(::getpid());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TestDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct TestBuild {
  std::string id = "abc1234-000001";
  std::string channel = "prod";
  std::string commit = "abc1234";
  std::string protocol = "00000000000000aa";
  bool dirty = false;
  std::string library = "counter.so";
  std::string bytes = "library bytes";
};

// Writes `b` as a build file at `path` and returns its manifest's bytes.
inline std::string WriteTestBuild(const std::string& path, const TestBuild& b) {
  boost::json::object manifest{
      {"build", b.id},
      {"commit", b.commit},
      {"dirty", b.dirty},
      {"branch", "prod"},
      {"channel", b.channel},
      {"protocol", b.protocol},
      {"plugins", boost::json::array{boost::json::object{{"file", b.library},
                                                         {"sha256", loader::Sha256Hex(b.bytes)},
                                                         {"name", "counter"},
                                                         {"version", "1.0.0"},
                                                         {"kind", "service"}}}}};
  const std::string text = boost::json::serialize(manifest);
  EXPECT_TRUE(
      loader::WriteArchive(path, {{loader::kBuildManifest, "", text}, {b.library, "", b.bytes}})
          .ok());
  return text;
}

}  // namespace molt::kernel::deploy::test

#endif  // MOLT_TESTS_KERNEL_DEPLOY_TEST_BUILDS_H_
