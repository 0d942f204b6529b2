// SPDX-License-Identifier: Apache-2.0
// File: tests/support/child_process.h
//
// Process: a real child process (moltd, a client app, molt-bot) with stdout and stderr merged
// into one pipe the test reads. No timing assertions: the waits are generous upper bounds that
// only stop a broken run from hanging. The destructor kills (SIGKILL) what still runs.
#ifndef MOLT_TESTS_SUPPORT_CHILD_PROCESS_H_
#define MOLT_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace molt::test {

// A child process with stdout and stderr merged into one pipe.
class Process {
 public:
  explicit Process(std::vector<std::string> args) {
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      std::vector<char*> argv;
      for (auto& a : args) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Process() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
    ::close(fd_);
  }

  // Reads output until `needle` appears (true) or the process ends or `limit` passes (false).
  bool WaitFor(const std::string& needle, std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (output_.find(needle) == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !ReadSome(static_cast<int>(left.count()))) {
        return output_.find(needle) != std::string::npos;
      }
    }
    return true;
  }
  void Signal(int signo) { ::kill(pid_, signo); }
  pid_t pid() const { return pid_; }
  // Waits for exit (reading all output); returns the exit code, or 128 + signal.
  int Wait() {
    while (ReadSome(30000)) {
    }
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exited_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& output() const { return output_; }

 private:
  bool ReadSome(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) {
      return false;
    }
    char buf[4096];
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) {
      return false;
    }
    output_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
  pid_t pid_ = -1;
  int fd_ = -1;
  bool exited_ = false;
  std::string output_;
};

// The port a moltd logged once it serves `plugins` plugins ("serving N plugins"), or "".
inline std::string ServingPort(Process& p, int plugins) {
  const std::string listening = "listening on 127.0.0.1:";
  if (!p.WaitFor("serving " + std::to_string(plugins) + " plugins")) {
    return "";
  }
  const std::size_t at = p.output().find(listening);
  return at == std::string::npos
             ? ""
             : std::to_string(std::stoi(p.output().substr(at + listening.size())));
}

// The output of a shell command (stdout; append 2>&1 for stderr), "" when it cannot run.
inline std::string Shell(const std::string& command) {
  std::string out;
  FILE* f = ::popen(command.c_str(), "r");
  char buf[256];
  while (f != nullptr && std::fgets(buf, sizeof buf, f) != nullptr) {
    out += buf;
  }
  if (f != nullptr) {
    ::pclose(f);
  }
  return out;
}

}  // namespace molt::test

#endif  // MOLT_TESTS_SUPPORT_CHILD_PROCESS_H_
