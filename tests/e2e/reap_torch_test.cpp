// `shmbpf reap` on what it exists for: the files a PyTorch job using the
// file_system sharing strategy leaves in /dev/shm when it is killed
// (parent and torch_shm_manager with SIGKILL), next to a second job that is
// still running. Both jobs see a tmpfs of the test's own as their /dev/shm
// (a bind mount in a mount namespace of their own), so that the usage
// measured is theirs alone while other tests fill the real /dev/shm.
#include "e2e/reap_support.hpp"
#include "e2e/run_cli.hpp"
#include "e2e/torch_job.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

// 1 MiB and a bit, as in torch_test.cpp.
constexpr int numel = 262144 + 1013;

// The torch_<worker>_* files of a job's worker on the test's tmpfs.
std::vector<std::string> worker_files(const ReapMount &m, pid_t worker) {
  std::vector<std::string> out;
  DIR *d = opendir(m.dir().c_str());
  if (!d)
    return out;
  const std::string prefix = "torch_" + std::to_string(worker) + "_";
  while (const dirent *e = readdir(d))
    if (std::string(e->d_name).starts_with(prefix))
      out.push_back(m.path(e->d_name));
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> job_files(const ReapMount &m, const TorchJob &job) {
  std::vector<std::string> out;
  for (pid_t w : job.workers())
    for (auto &f : worker_files(m, w))
      out.push_back(std::move(f));
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ReapTorch, KilledJobsFilesAreFreedARunningJobKeepsItsOwn) {
  SHMBPF_REQUIRE_TORCH();
  ReapMount m("512m");
  ASSERT_EQ(m.error(), "");
  // Run in the job's first process, before Python: every process of the
  // job gets the test's tmpfs as /dev/shm.
  const auto private_shm = [&] {
    return unshare(CLONE_NEWNS) == 0 &&
           mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0 &&
           mount(m.dir().c_str(), "/dev/shm", nullptr, MS_BIND, nullptr) == 0;
  };
  TorchJob killed, running;
  ASSERT_EQ(killed.start("file_system", 8, numel, private_shm), "");
  ASSERT_EQ(running.start("file_system", 4, numel, private_shm), "");
  const std::vector<std::string> files = job_files(m, killed);
  const std::vector<std::string> kept = job_files(m, running);
  ASSERT_EQ(files.size(), 8u) << "one torch_<worker>_* file per tensor";
  ASSERT_EQ(kept.size(), 4u);
  std::map<std::string, FileSnap> kept_before;
  for (const auto &f : kept)
    kept_before[f] = snap(f);

  ASSERT_FALSE(killed.shm_managers().empty()) << "file_system starts torch_shm_manager";
  ASSERT_TRUE(killed.kill_all()) << "the job's processes did not all die";
  ASSERT_EQ(job_files(m, killed), files) << "SIGKILL leaves every file behind";
  const uint64_t du_bytes = du_total(files);
  ASSERT_EQ(du_bytes, resident_bytes(files));

  // Dry run, one worker of the killed job at a time: every leftover file,
  // with du's bytes.
  for (pid_t w : killed.workers()) {
    SCOPED_TRACE("worker " + std::to_string(w));
    const std::vector<std::string> mine = worker_files(m, w);
    auto r = run_shmbpf("reap --json --min-age 0 --mount " + m.dir() + " --match '" + m.dir() +
                        "/torch_" + std::to_string(w) + "_*'");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    const auto segs = by_path(r.json());
    std::set<std::string> listed;
    for (const auto &[path, s] : segs) {
      listed.insert(path);
      EXPECT_EQ(s["status"], "would-free") << s;
      EXPECT_EQ(s["bytes"], du_total({path})) << path;
      EXPECT_EQ(s["segment"]["pattern"], "torch");
      EXPECT_EQ(s["segment"]["inferred_pid"], w);
    }
    EXPECT_EQ(listed, std::set<std::string>(mine.begin(), mine.end())) << r.out;
  }

  // A reap whose match covers both jobs: the running job's files are not
  // selected (they are held), so nothing is skipped.
  const std::string all = " --match '" + m.dir() + "/torch_*'";
  auto covering = run_shmbpf("reap --json --min-age 0 --mount " + m.dir() + all);
  EXPECT_EQ(covering.code, 0) << covering.out << covering.err;
  const auto covered = by_path(covering.json());
  EXPECT_EQ(covered.size(), files.size()) << covering.out;
  for (const auto &f : kept)
    EXPECT_FALSE(covered.count(f)) << f << " of the running job selected: " << covering.out;

  // Freed, worker by worker: /dev/shm's usage drops by exactly du's bytes.
  const uint64_t used = m.used_bytes();
  uint64_t freed = 0;
  for (pid_t w : killed.workers()) {
    SCOPED_TRACE("worker " + std::to_string(w));
    const std::vector<std::string> mine = worker_files(m, w);
    const uint64_t mine_bytes = du_total(mine);
    auto r = run_shmbpf("reap --yes --json --min-age 0 --mount " + m.dir() + " --match '" +
                        m.dir() + "/torch_" + std::to_string(w) + "_*'");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    const json j = r.json();
    EXPECT_EQ(j["freed"], mine.size());
    EXPECT_EQ(j["bytes_freed"], mine_bytes);
    freed += j["bytes_freed"].get<uint64_t>();
    for (const auto &f : mine)
      EXPECT_FALSE(exists(f)) << f;
  }
  EXPECT_EQ(freed, du_bytes);
  EXPECT_EQ(used - m.used_bytes(), du_bytes);
  EXPECT_TRUE(job_files(m, killed).empty());

  // Nothing is left to free, and the running job keeps every file.
  auto after = run_shmbpf("reap --yes --json --min-age 0 --mount " + m.dir() + all);
  EXPECT_EQ(after.code, 0) << after.out << after.err;
  EXPECT_EQ(after.json()["selected"], 0) << after.out;
  EXPECT_EQ(job_files(m, running), kept);
  // The same files (a running job may write into its own tensors).
  for (const auto &f : kept) {
    const FileSnap now = snap(f), before = kept_before[f];
    EXPECT_TRUE(now.exists && now.dev == before.dev && now.ino == before.ino &&
                now.mode == before.mode)
        << f;
  }
  EXPECT_EQ(kill(running.parent(), 0), 0) << "the running job's parent died";
}

} // namespace
} // namespace shmbpf::test
