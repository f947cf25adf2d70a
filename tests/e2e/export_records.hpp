// What the end-to-end tests of `shmbpf serve --export-file` share: a
// temporary directory, the records of an NDJSON file being written, and
// children that make files and exit.
#pragma once

#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {

using json = nlohmann::json;

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/shmbpf-e2e-export-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    path = tmpl;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// The complete lines of an NDJSON file being written (a last line without
// its '\n' is still on its way), each parsed; a line that is not JSON is a
// test failure.
inline std::vector<json> records_of(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string text = s.str();
  std::vector<json> out;
  size_t from = 0;
  for (size_t nl; (nl = text.find('\n', from)) != std::string::npos; from = nl + 1) {
    const std::string line = text.substr(from, nl - from);
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      ADD_FAILURE() << path << ": not a JSON object: " << line;
    else
      out.push_back(std::move(j));
  }
  return out;
}

// Waits until some record of the file satisfies pred.
inline std::optional<json> wait_record(const std::string &path,
                                       const std::function<bool(const json &)> &pred,
                                       std::chrono::seconds timeout) {
  const auto deadline = Clock::now() + timeout;
  do {
    for (const json &j : records_of(path))
      if (pred(j))
        return j;
    std::this_thread::sleep_for(200ms);
  } while (Clock::now() < deadline);
  return std::nullopt;
}

inline bool is(const json &j, const char *event, const std::string &path) {
  return j.value("event", "") == event && j.value("path", "") == path;
}

// A child that runs fn and exits with its status; returns its pid once it
// has exited (0 status asserted by the caller through ok).
inline pid_t run_child(const std::function<int()> &fn, bool &ok) {
  const pid_t pid = ForkGuard::fork();
  if (pid == 0)
    _exit(fn());
  int st = 0;
  ok = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  return pid;
}

// Creates path with data in it, closes it; returns its inode, 0 on failure.
inline uint64_t make_file(const std::string &path, size_t bytes) {
  const int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0)
    return 0;
  const std::string data(bytes, 'e');
  struct stat st {};
  const bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) &&
                  fstat(fd, &st) == 0;
  close(fd);
  return ok ? st.st_ino : 0;
}

} // namespace shmbpf::test
