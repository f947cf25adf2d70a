// The failure shmbpf exists for, end to end: a PyTorch DataLoader-like
// writer in a simulated docker container (its own 64 MiB /dev/shm) puts
// one batch after another into shared-memory files, as torch's file_system
// strategy does (a file per batch, ftruncate, mmap, the batch written into
// the mapping), keeps them all, and dies of SIGBUS when the mount is full.
// A running daemon names the container, its /dev/shm, the file and the
// cause: in /metrics, in `leaks --server --window`, in `ls --mounts`.
#include "background.hpp"
#include "container_sim.hpp"
#include "run_cli.hpp"
#include "serve_http.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

namespace shmbpf::test {
namespace {

using nlohmann::json;

constexpr size_t kBatch = 6 * kMiB; // the eleventh does not fit in 64 MiB

TEST(SigbusContainer, ADataLoaderFillsItsDevShmAndShmbpfSaysWhere) {
  SHMBPF_REQUIRE_ROOT();
  ContainerSim ctr;
  ASSERT_EQ(ctr.start(), "") << "cannot build the simulated container";
  char tmpl[] = "/tmp/shmbpf-e2e-sbsock-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() { std::filesystem::remove_all(dir); }
  } sock_dir{tmpl};
  const std::string sock = sock_dir.dir + "/shmbpf.sock";
  const int port = free_port();
  ShmbpfProcess serve(
      {"serve", "--no-state", "--listen", "127.0.0.1:" + std::to_string(port), "--socket", sock});
  SHMBPF_SERVE_READY(serve, port);

  const int code = ctr.run([] {
    die_of_sigbus_plainly();
    for (int n = 0; n < 64; ++n) {
      const std::string path =
          "/dev/shm/torch_" + std::to_string(getpid()) + "_e2e_" + std::to_string(n);
      int fd = open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
      if (fd < 0 || ftruncate(fd, kBatch) != 0)
        return 1;
      void *p = mmap(nullptr, kBatch, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (p == MAP_FAILED)
        return 2;
      std::memset(p, n + 1, kBatch); // the batch: SIGBUS once the mount is full
      munmap(p, kBatch);
      close(fd); // the file stays: a reference the job still keeps
    }
    return 3;
  });
  ASSERT_EQ(code, 128 + SIGBUS) << "the writer should die of SIGBUS";

  // The daemon applies events as they come.
  const std::vector<std::string> labels = {"container_id=\"docker://" + ctr.id() + "\"",
                                           "mountpoint=\"/dev/shm\""};
  std::optional<double> faults;
  for (int i = 0; i < 50 && !faults; ++i) {
    if (auto m = get(port, "/metrics"); m && m->status == 200)
      faults = metric(m->body, "shmbpf_sigbus_total", labels);
    if (!faults)
      std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(faults, 1.0);

  auto r = run_shmbpf("leaks --server " + sock + " --window 120 --json --match '/nothing'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  json j = r.json();
  // The container's /dev/shm (tests running alongside fault too).
  json m;
  for (const auto &b : j["bus_errors"])
    if (b["container"].is_object() && b["container"]["id"] == ctr.id())
      m = b;
  ASSERT_FALSE(m.is_null()) << r.out;
  EXPECT_EQ(m["mountpoint"], "/dev/shm");
  EXPECT_EQ(m["count"], 1);
  const json &last = m["last"];
  ASSERT_TRUE(last["container"].is_object()) << last;
  EXPECT_EQ(last["container"]["id"], ctr.id());
  EXPECT_EQ(last["container"]["runtime"], "docker");
  EXPECT_EQ(last["cause"], "mount-full");
  EXPECT_EQ(last["kind"], "tmpfs");
  const std::string path = last["path"];
  EXPECT_TRUE(path.starts_with("/dev/shm/torch_")) << path;
  EXPECT_TRUE(path.ends_with("_e2e_10")) << path; // ten batches fit
  EXPECT_EQ(last["file_size"], kBatch);
  EXPECT_GT(last["offset"].get<uint64_t>(), 0u);
  EXPECT_LT(last["offset"].get<uint64_t>(), kBatch);
  EXPECT_EQ(last["mount_size"], 64 * kMiB);
  EXPECT_GE(last["mount_used"].get<uint64_t>(), 63 * kMiB);

  // The container's /dev/shm is marked in the mounts view (once the
  // daemon's once-a-second sample has measured it): its device is the one
  // the host reaches through the container's root.
  struct stat st {};
  ASSERT_EQ(stat(ctr.host_path("/dev/shm/").c_str(), &st), 0);
  const std::string dev = std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev));
  json mount;
  std::string listed;
  for (int i = 0; i < 50; ++i) {
    auto ls = run_shmbpf("ls --server " + sock + " --by mount --json");
    ASSERT_EQ(ls.code, 0) << ls.err;
    listed = ls.out;
    const json all = ls.json(); // the loop below must not outlive it
    for (const auto &mnt : all["mounts"])
      if (mnt["dev"] == dev)
        mount = mnt;
    if (!mount.is_null() && mount["percent"].get<double>() >= 98.0)
      break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_FALSE(mount.is_null()) << dev << " not in " << listed;
  EXPECT_EQ(mount["mountpoint"], "/dev/shm");
  EXPECT_EQ(mount["sigbus"], 1) << mount;
  EXPECT_GE(mount["percent"].get<double>(), 98.0) << mount;

  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(30s), 0);
}

} // namespace
} // namespace shmbpf::test
