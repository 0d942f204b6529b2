// SPDX-License-Identifier: Apache-2.0
// File: tests/support/postgres.h
//
// PostgresServer: a real PostgreSQL 15 for the tests that need one, started by the test itself
// (scripts/install-deps.sh installs Debian's postgresql-15; nothing of the system's cluster is
// used): initdb in a temporary directory, the server listening on a Unix socket there only, torn
// down (SIGTERM, then the directory removed) when the object goes. Run as root (CI), the server
// runs as the `postgres` user, as PostgreSQL requires.
//
//   PostgresServer pg;                         // ASSERT_TRUE(pg.ok()) << pg.error();
//   std::string url = pg.NewDatabase();        // a database of its own: "host=/tmp/... dbname=t3"
//   pg.Restart();                              // the same data, the server stopped and started
//   pg.Restart(PostgresServer::Stopping::kImmediate);  // ... as pg_ctl -m immediate stops it
//
// Thread safety: one thread.
#ifndef MOLT_TESTS_SUPPORT_POSTGRES_H_
#define MOLT_TESTS_SUPPORT_POSTGRES_H_

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace molt::test {

class PostgresServer {
 public:
  // The directory of Debian's server binaries.
  static constexpr const char* kBin = "/usr/lib/postgresql/15/bin";

  PostgresServer() {
    namespace fs = std::filesystem;
    char tmpl[] = "/tmp/molt-pg-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = tmpl;
    if (!fs::exists(std::string(kBin) + "/initdb")) {
      error_ = std::string("no PostgreSQL 15 server at ") + kBin +
               " (scripts/install-deps.sh installs Debian's postgresql-15)";
      return;
    }
    if (::geteuid() == 0) {  // PostgreSQL refuses to run as root: as the postgres user
      const passwd* pw = ::getpwnam("postgres");
      if (pw == nullptr) {
        error_ = "running as root and there is no postgres user to run PostgreSQL as";
        return;
      }
      runas_ = "setpriv --reuid=" + std::to_string(pw->pw_uid) +
               " --regid=" + std::to_string(pw->pw_gid) + " --clear-groups ";
      if (::chown(dir_.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
        error_ = "cannot give " + dir_ + " to the postgres user";
        return;
      }
    }
    port_ = 20000 + static_cast<int>(::getpid() % 20000);
    if (!Run(runas_ + kBin + "/initdb -D " + dir_ + "/data -U molt --auth=trust -E UTF8 " +
             "--no-sync --no-instructions > " + dir_ + "/initdb.log 2>&1")) {
      error_ = "initdb failed: " + Slurp(dir_ + "/initdb.log");
      return;
    }
    Start();
  }
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;
  ~PostgresServer() {
    Stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  bool ok() const { return error_.empty() && pid_ > 0; }
  const std::string& error() const { return error_; }
  const std::string& dir() const { return dir_; }
  int port() const { return port_; }

  // A libpq connection string for `database` on this server.
  std::string Url(const std::string& database = "postgres") const {
    return "host=" + dir_ + " port=" + std::to_string(port_) + " user=molt dbname=" + database;
  }
  // A fresh database of its own; its connection string.
  std::string NewDatabase() {
    const std::string name = "t" + std::to_string(++databases_);
    Psql("CREATE DATABASE " + name);
    return Url(name);
  }
  // Runs `sql` with psql on the database `database`; its output.
  std::string Psql(const std::string& sql, const std::string& database = "postgres") const {
    const std::string out = dir_ + "/psql.out";
    Run("psql -X -q -A -t -v ON_ERROR_STOP=1 \"" + Url(database) + "\" -c \"" + sql + "\" > " +
        out + " 2>&1");
    return Slurp(out);
  }
  // How a server stops, as pg_ctl -m names it: kFast (SIGINT: every connection told and cut;
  // SIGTERM would wait for every client to leave) or kImmediate (SIGQUIT: the processes end at
  // once, telling no client, and the next start recovers from the WAL, as after a crash).
  enum class Stopping { kFast, kImmediate };
  // Stops the server and waits for it.
  void Stop(Stopping how = Stopping::kFast) {
    if (pid_ > 0) {
      ::kill(pid_, how == Stopping::kFast ? SIGINT : SIGQUIT);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = 0;
    }
  }
  // Starts it again on the same data and port; waits until it takes connections (a minute at
  // most: a loaded machine's crash recovery after kImmediate takes seconds). False, and error()
  // says why with the server's log, when it does not.
  bool Start() {
    const std::string cmd = runas_ + kBin + "/postgres -D " + dir_ + "/data -k " + dir_ + " -p " +
                            std::to_string(port_) +
                            " -c listen_addresses= -c fsync=off -c max_connections=100";
    pid_ = ::fork();
    if (pid_ == 0) {
      const std::string log = dir_ + "/postgres.log";
      ::execl("/bin/sh", "sh", "-c", ("exec " + cmd + " >> " + log + " 2>&1").c_str(), nullptr);
      ::_exit(127);
    }
    for (int i = 0; i < 1200; ++i) {
      if (Run(std::string(kBin) + "/pg_isready -q -h " + dir_ + " -p " + std::to_string(port_))) {
        return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    error_ = "PostgreSQL did not start within 60 s: " + Slurp(dir_ + "/postgres.log");
    return false;
  }
  bool Restart(Stopping how = Stopping::kFast) {
    Stop(how);
    return Start();
  }
  // The server's own log (what a failed test prints beside its own findings).
  std::string Log() const { return Slurp(dir_ + "/postgres.log"); }

 private:
  static bool Run(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }
  static std::string Slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string dir_;
  std::string runas_;
  std::string error_;
  int port_ = 0;
  pid_t pid_ = 0;
  int databases_ = 0;
};

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_POSTGRES_H_
