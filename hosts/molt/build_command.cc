// SPDX-License-Identifier: Apache-2.0
// File: hosts/molt/build_command.cc
//
// molt build in its steps: the flags, the plugins, the gate, the target, the manifest, the
// archive and the report.
#include "hosts/molt/build_command.h"

#include <boost/json.hpp>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "hosts/molt/build_manifest.h"
#include "hosts/molt/cli.h"
#include "hosts/molt/git_info.h"
#include "hosts/molt/plugin_set.h"
#include "hosts/molt/spec_gate.h"
#include "kernel/src/loader/build.h"
#include "kernel/src/loader/build_archive.h"

namespace molt::cli {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace loader = kernel::loader;

// molt build's flags and help.
cxxopts::Options BuildOptions() {
  cxxopts::Options o(
      "molt build",
      "Packs the plugin libraries (*.so) of DIR into one build file: a tar archive (tar tf reads\n"
      "it) of the libraries and molt-build.json, their manifest. The build id is\n"
      "<commit7>-<hash6> (the git commit of DIR's tree and the first 6 hex digits of the\n"
      "libraries' hash; <commit7>-dirty-<hash6> when the tree has uncommitted changes;\n"
      "nogit-<hash6> outside git). The manifest holds every library's SHA-256, name, version,\n"
      "kind and ABI, the protocol hash of the channels they declare (from moltd --self-test,\n"
      "the spec gate, which must pass: the plugins' own tests, the security audit and the fuzz\n"
      "gate), the branch, the channel and the health window. The same inputs give the same\n"
      "id and the same bytes. Refuses an empty DIR, a library that is not a plugin, and two\n"
      "plugins of one name.");
  o.add_options()("dir", "the plugin directory", cxxopts::value<std::string>())(
      "out", "the build file to write (default: <build id>.molt here)",
      cxxopts::value<std::string>())(
      "branch", "the branch it is built for (default: the git branch; main and master are prod)",
      cxxopts::value<std::string>())(
      "channel", "prod or dev (default: prod for the prod branch, dev for any other)",
      cxxopts::value<std::string>())("health-errors",
                                     "errors that roll a deploy back in its health window (1..100)",
                                     cxxopts::value<int>())(
      "health-window", "the health window in seconds (5..300)", cxxopts::value<double>())(
      "moltd", "the moltd that checks the set (default: beside molt, else on PATH)",
      cxxopts::value<std::string>());
  o.parse_positional({"dir"});
  o.positional_help("DIR");
  return o;
}

// What the build is for: --branch (else `git`'s branch as a Molt branch), --channel (else prod
// for the prod branch, dev for any other), the health window (else `listed`'s); the exit code of
// a bad one (printed). `protocol` is the spec gate's.
std::variant<int, BuildTarget> TargetOf(const cxxopts::ParseResult& parsed, const GitInfo& git,
                                        const loader::Build& listed, std::string protocol) {
  BuildTarget t;
  t.protocol = std::move(protocol);
  t.branch = parsed.count("branch") > 0 ? parsed["branch"].as<std::string>() : BranchOf(git.branch);
  if (!IsBranchName(t.branch)) {
    return Fail(kExitUsage, "branch \"" + t.branch + "\" is not 1 to 64 of [a-z0-9._-]");
  }
  t.channel = parsed.count("channel") > 0 ? parsed["channel"].as<std::string>()
                                          : (t.branch == "prod" ? "prod" : "dev");
  if (t.channel != "prod" && t.channel != "dev") {
    return Fail(kExitUsage, "channel \"" + t.channel + "\" is prod or dev");
  }
  t.health_errors = listed.health_errors;
  t.health_window_seconds = listed.health_window_seconds;
  if (parsed.count("health-errors") > 0) {
    const int v = parsed["health-errors"].as<int>();
    if (v < loader::kHealthErrorsMin || v > loader::kHealthErrorsMax) {
      return Fail(kExitUsage, "--health-errors is 1 to 100");
    }
    t.health_errors = static_cast<std::uint32_t>(v);
  }
  if (parsed.count("health-window") > 0) {
    t.health_window_seconds = parsed["health-window"].as<double>();
    if (!(t.health_window_seconds >= loader::kHealthWindowMinSeconds &&
          t.health_window_seconds <= loader::kHealthWindowMaxSeconds)) {
      return Fail(kExitUsage, "--health-window is 5 to 300 seconds");
    }
  }
  return t;
}

// Prints what was built: its JSON with --json, else its lines and a table of its plugins.
void PrintBuilt(bool as_json, const std::string& out, const BuildManifest& m, const GitInfo& git,
                const BuildTarget& t, const PluginSet& set) {
  if (as_json) {
    std::error_code ec;
    json::object o{{"build", m.id},
                   {"file", out},
                   {"bytes", fs::file_size(out, ec)},
                   {"manifest_sha256", loader::Sha256Hex(m.text)},
                   {"manifest", m.json}};
    PrintJson(o);
    return;
  }
  const std::vector<PluginEntry>& plugins = set.plugins();
  std::cout << "built " << m.id << " (" << plugins.size() << " plugins, " << Megabytes(set.bytes())
            << ") -> " << out << "\n";
  std::cout << "  branch " << t.branch << ", channel " << t.channel << ", "
            << (git.in_git ? "commit " + git.commit.substr(0, 7) + (git.dirty ? " (dirty)" : "")
                           : std::string("not in git"))
            << (t.protocol.empty() ? std::string() : ", protocol " + t.protocol) << "\n";
  std::vector<std::vector<std::string>> rows;
  for (const PluginEntry& p : plugins) {
    rows.push_back(
        {"  " + p.name, p.version, p.kind, "ABI " + p.abi, p.file, p.sha256.substr(0, 12)});
  }
  PrintTable(rows);
}

}  // namespace

int BuildCommand(int argc, char** argv) {
  cxxopts::Options o = BuildOptions();
  cxxopts::ParseResult parsed;
  if (auto done = ParseLocal(o, argc, argv, &parsed)) {
    return *done;
  }
  if (parsed.count("dir") == 0) {
    return Fail(kExitUsage, "which plugin directory? molt build DIR");
  }
  const std::string dir = parsed["dir"].as<std::string>();
  Result<loader::Build> listed = loader::ReadBuild(dir);
  if (!listed.ok()) {
    return Fail(kExitFailed, listed.status().message());
  }
  if (listed->files.empty()) {
    return Fail(kExitFailed, "plugin directory \"" + dir +
                                 "\" holds no plugin (*.so): there is nothing to build");
  }
  // Each library's descriptor, read from a private copy as a host would.
  Result<PluginSet> set = PluginSet::Read(dir, listed->files);
  if (!set.ok()) {
    return Fail(kExitFailed, set.status().message());
  }
  // The spec gate (the plugins' own tests, the security audit, the fuzz gate), and the protocol:
  // the channel table the services declare, as moltd --self-test boots them.
  std::string protocol;
  if (set->has_services()) {
    Result<std::string> gate = RunSpecGate(
        MoltdPath(parsed.count("moltd") > 0 ? std::optional(parsed["moltd"].as<std::string>())
                                            : std::nullopt),
        dir);
    if (!gate.ok()) {
      return Fail(kExitFailed, gate.status().message());
    }
    protocol = *gate;
  }
  // Where it comes from, and what it is for.
  const GitInfo git = ReadGitInfo(dir);
  auto target = TargetOf(parsed, git, *listed, protocol);
  if (auto* code = std::get_if<int>(&target)) {
    return *code;
  }
  const BuildTarget& t = std::get<BuildTarget>(target);
  const BuildManifest manifest = MakeManifest(git, t, set->plugins());
  const std::string out =
      parsed.count("out") > 0 ? parsed["out"].as<std::string>() : manifest.id + ".molt";
  std::vector<loader::ArchiveInput> inputs = {{loader::kBuildManifest, "", manifest.text}};
  for (const PluginEntry& p : set->plugins()) {
    inputs.push_back({p.file, p.path, ""});
  }
  if (Status s = loader::WriteArchive(out, inputs); !s.ok()) {
    return Fail(kExitFailed, s.message());
  }
  PrintBuilt(parsed.count("json") > 0, out, manifest, git, t, *set);
  return kExitOk;
}

}  // namespace molt::cli
