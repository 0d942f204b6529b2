// SPDX-License-Identifier: Apache-2.0
// Deploys (deploy/, loader/signing.h): what a server spends on one: checking a deploy's
// signature beside hashing the same bytes, and verifying an arriving build (read strictly,
// unpacked, every library hashed) beside the SHA-256 of the same file, for the bundled plugin
// set and for a 50 MB build.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_archive.h"
#include "kernel/src/loader/signing.h"

namespace molt::kernel {
namespace {

namespace fs = std::filesystem;

loader::DeployFields Fields() {
  loader::DeployFields f;
  f.branch = "prod";
  f.build = std::string(64, 'a');
  f.build_id = "6a62aad-385820";
  f.seq = 1234;
  f.commit = std::string(40, 'c');
  f.channel = "prod";
  f.sent_ms = 1'796'300'000'000;
  return f;
}

// Ed25519 verification of a deploy's canonical string (about 160 bytes), as a server does for
// every signed deploy it takes.
void BM_VerifyDeploySignature(benchmark::State& state) {
  const loader::PrivateKey key = loader::GenerateKey().value();
  const std::string pub = loader::PublicKeyOf(key).value();
  const std::string message = loader::CanonicalDeploy(Fields());
  const std::string sig = loader::Sign(key, message).value();
  for (auto _ : state) {
    benchmark::DoNotOptimize(loader::Verify(pub, message, sig));
  }
  state.counters["message_bytes"] = static_cast<double>(message.size());
}
BENCHMARK(BM_VerifyDeploySignature);

// Baseline: SHA-256 of the same canonical string.
void BM_DeploySignatureBaseline_Sha256(benchmark::State& state) {
  const std::string message = loader::CanonicalDeploy(Fields());
  for (auto _ : state) {
    benchmark::DoNotOptimize(loader::Sha256Hex(message));
  }
}
BENCHMARK(BM_DeploySignatureBaseline_Sha256);

// A build file: the bundled plugins (big:0, about 4 MB) or one 50 MB library (big:1), packed as
// `molt build` packs them.
class BuildFile {
 public:
  explicit BuildFile(bool big) {
    dir_ = fs::temp_directory_path() / ("molt_deploy_bench_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::vector<std::pair<std::string, std::string>> libs;  // file name, path
    if (big) {
      const std::string path = (dir_ / "big.so").string();
      std::ofstream out(path, std::ios::binary);
      std::string chunk(1 << 20, '\0');
      for (int i = 0; i < 50; ++i) {
        chunk[0] = static_cast<char>(i);
        out << chunk;
      }
      libs.emplace_back("big.so", path);
    } else {
      for (const fs::directory_entry& e : fs::directory_iterator(MOLT_PLUGIN_DIR)) {
        if (e.path().extension() == ".so") {
          libs.emplace_back(e.path().filename().string(), e.path().string());
        }
      }
      std::sort(libs.begin(), libs.end());
    }
    std::string manifest = "{\"build\":\"bench-000001\",\"plugins\":[";
    for (std::size_t i = 0; i < libs.size(); ++i) {
      manifest += std::string(i ? "," : "") + "{\"file\":\"" + libs[i].first + "\",\"sha256\":\"" +
                  loader::Sha256File(libs[i].second).value() + "\"}";
    }
    manifest += "]}";
    std::vector<loader::ArchiveInput> inputs = {{loader::kBuildManifest, "", manifest}};
    for (const auto& [name, path] : libs) {
      inputs.push_back({name, path, ""});
    }
    file_ = (dir_ / "build.molt").string();
    (void)loader::WriteArchive(file_, inputs);
  }
  ~BuildFile() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  const std::string& file() const { return file_; }
  std::string scratch() const { return (dir_ / "scratch").string(); }

 private:
  fs::path dir_;
  std::string file_;
};

// What a registry does with an arriving build (Registry::AddBuild's verification).
void BM_VerifyBuildFile(benchmark::State& state) {
  BuildFile build(state.range(0) != 0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(loader::VerifyBuildFile(build.file(), build.scratch()));
  }
  const auto bytes = static_cast<double>(fs::file_size(build.file()));
  state.counters["MB"] = bytes / 1e6;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_VerifyBuildFile)->ArgName("big")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

// Baseline: the SHA-256 of the same build file, read once.
void BM_VerifyBuildFileBaseline_Sha256(benchmark::State& state) {
  BuildFile build(state.range(0) != 0);
  for (auto _ : state) {
    benchmark::DoNotOptimize(loader::Sha256File(build.file()));
  }
}
BENCHMARK(BM_VerifyBuildFileBaseline_Sha256)
    ->ArgName("big")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace molt::kernel
