// A container host for the audit benchmark (docs/BENCHMARKS.md, "audit"):
// N simulated containers (tests/container_sim.hpp: own mount, IPC and PID
// namespaces, own /dev/shm, a cgroup v2 scope named as Docker names one)
// holding S segments between them, spread evenly. In each container one
// process creates its share: nine in ten as files in the container's
// /dev/shm (every other one kept open, a page written in every fourth) and
// the rest as System V segments of its IPC namespace, kept attached. Every
// tenth container leaves one file world-writable, so the audit has a few
// findings to report, as a real host would.
//
//   audit_fleet CONTAINERS SEGMENTS [--no-wait]
//
// Prints "ready containers=N segments=S files=F sysv=V setup_s=T" once
// everything exists, then holds it until stdin closes (the benchmark runs
// `shmbpf audit` meanwhile) or, with --no-wait, at once; then tears down and
// prints "done". Root.
#include "container_sim.hpp"

#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using shmbpf::test::ContainerSim;

// Runs inside a container: creates files and segments, leaves the kept ones
// open or attached.
bool populate(int index, int files, int sysv) {
  char path[64];
  for (int i = 0; i < files; ++i) {
    std::snprintf(path, sizeof path, "/dev/shm/bench-%03d-%05d", index, i);
    const bool open_to_all = index % 10 == 0 && i == 0;
    int fd = open(path, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || (open_to_all && fchmod(fd, 0666) != 0))
      return false;
    static const char page[4096] = {1};
    if (i % 4 == 0 && write(fd, page, sizeof page) != sizeof page)
      return false;
    if (i % 2)
      close(fd);
  }
  for (int i = 0; i < sysv; ++i) {
    int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    if (id < 0 || shmat(id, nullptr, 0) == reinterpret_cast<void *>(-1))
      return false;
  }
  return true;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: audit_fleet CONTAINERS SEGMENTS [--no-wait]\n");
    return 2;
  }
  const int containers = std::atoi(argv[1]);
  const int segments = std::atoi(argv[2]);
  const bool wait = !(argc > 3 && std::strcmp(argv[3], "--no-wait") == 0);
  if (containers <= 0 || segments < containers) {
    std::fprintf(stderr, "audit_fleet: need at least one segment per container\n");
    return 2;
  }
  // Each holder keeps up to half of its files open: raise the fd limit
  // that the children inherit.
  rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
  nofile.rlim_cur = nofile.rlim_max;
  setrlimit(RLIMIT_NOFILE, &nofile);

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<ContainerSim>> fleet;
  int files_total = 0, sysv_total = 0;
  for (int c = 0; c < containers; ++c) {
    const int share = segments / containers + (c < segments % containers ? 1 : 0);
    const int sysv = share / 10;
    const int files = share - sysv;
    auto sim = std::make_unique<ContainerSim>("shmbpf-bench.slice");
    if (std::string err = sim->start(); !err.empty()) {
      std::fprintf(stderr, "audit_fleet: container %d: %s\n", c, err.c_str());
      return 1;
    }
    if (sim->spawn([&] { return populate(c, files, sysv); }) < 0) {
      std::fprintf(stderr, "audit_fleet: container %d: cannot create its segments\n", c);
      return 1;
    }
    files_total += files;
    sysv_total += sysv;
    fleet.push_back(std::move(sim));
  }
  const double setup_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ready containers=%d segments=%d files=%d sysv=%d setup_s=%.1f\n", containers,
              files_total + sysv_total, files_total, sysv_total, setup_s);
  std::fflush(stdout);
  if (wait) {
    char buf[256];
    while (read(0, buf, sizeof buf) > 0) {
    }
  }
  // Each container's /dev/shm and IPC namespace go with its last process.
  fleet.clear();
  std::printf("done\n");
  return 0;
}
