// A container host's runtime state laid out in a temporary directory: one
// subdirectory per runtime, RuntimeRoots pointing at them, files written
// where each runtime keeps them, all removed at the end.
#pragma once

#include "sources/runtime_names.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace shmbpf {

struct RuntimeDir {
  std::filesystem::path root;
  RuntimeRoots roots;
  RuntimeDir() {
    char tmpl[] = "/tmp/shmbpf-runtime-dir-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    root = tmpl;
    roots.docker = (root / "docker").string();
    roots.containerd = (root / "containerd").string();
    roots.crio = (root / "crio").string();
    roots.podman = (root / "storage").string();
    roots.pod_logs = (root / "pods").string();
  }
  ~RuntimeDir() { std::filesystem::remove_all(root); }
  RuntimeDir(const RuntimeDir &) = delete;
  RuntimeDir &operator=(const RuntimeDir &) = delete;
  void write(const std::filesystem::path &path, const std::string &text) const {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
};

} // namespace shmbpf
