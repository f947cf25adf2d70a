// The workload shmbpf exists for: PyTorch's torch.multiprocessing sharing
// tensors through /dev/shm, with Debian's python3-torch. The Python side is
// tests/e2e/py/torch_pool.py.
#include "e2e/background.hpp"
#include "e2e/run_cli.hpp"
#include "e2e/torch_job.hpp"
#include "support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace shmbpf::test {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// The clock of the `now_ns` of top's frames.
uint64_t boottime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// `shmbpf top -b --json ...` running in the background while a job runs,
// its stdout read one frame (one JSON line) at a time. It dies with the
// test process.
class TopFrames {
public:
  explicit TopFrames(const std::vector<std::string> &args)
      : top_(args, [] { prctl(PR_SET_PDEATHSIG, SIGKILL); }) {}

  // The next frame; nullopt when top ended, printed something that is not
  // JSON (see problem()), or printed nothing within the timeout.
  std::optional<json> next(std::chrono::milliseconds timeout) {
    auto has_line = [&](const std::string &out) {
      return out.find('\n', pos_) != std::string::npos;
    };
    if (!top_.wait_output(has_line, timeout)) {
      problem_ = top_.exited() ? "top ended" : "no frame within the timeout";
      return std::nullopt;
    }
    const std::string out = top_.out();
    const size_t nl = out.find('\n', pos_);
    const std::string line = out.substr(pos_, nl - pos_);
    pos_ = nl + 1;
    ++frames_;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j["now_ns"].is_number_unsigned()) {
      problem_ = "frame " + std::to_string(frames_) + " is not a JSON frame: " + line;
      return std::nullopt;
    }
    return j;
  }

  // The first frame whose snapshot was taken at or after since_ns (boottime).
  std::optional<json> frame_after(uint64_t since_ns, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto j = next(std::max(left, 1ms));
      if (!j || (*j)["now_ns"].get<uint64_t>() >= since_ns)
        return j;
    }
  }

  // SIGTERM (top's quit); the wait status, nullopt if it had to be killed.
  std::optional<int> stop() {
    top_.signal(SIGTERM);
    return top_.wait(5s);
  }
  std::optional<int> wait(std::chrono::milliseconds timeout) { return top_.wait(timeout); }
  std::string err() { return top_.err(); }
  const std::string &problem() const { return problem_; }
  size_t frames() const { return frames_; }

private:
  ShmbpfProcess top_;
  size_t pos_ = 0; // start of the first unread line
  std::string problem_;
  size_t frames_ = 0;
};

// The segment rows of a top frame that are torch_<worker>_* files of a job,
// by path.
std::map<std::string, json> torch_rows(const json &frame, const std::set<pid_t> &workers) {
  std::map<std::string, json> out;
  for (const auto &s : frame["rows"])
    if (s["path"].is_string() && workers.contains(torch_pid(s["path"].get<std::string>())))
      out.emplace(s["path"].get<std::string>(), s);
  return out;
}

template <class K, class V> std::set<K> keys_of(const std::map<K, V> &m) {
  std::set<K> out;
  for (const auto &[k, v] : m)
    out.insert(k);
  return out;
}

constexpr int tensors = 8;
// 1 MiB and a bit, an odd element count so the file size is not a round
// number anything else in /dev/shm is likely to share.
constexpr int numel = 262144 + 1013;

TEST(TorchE2E, FileSystemStrategyLiveSegmentsThenOrphansAfterKill) {
  SHMBPF_REQUIRE_TORCH();
  TorchJob job;
  std::string why = job.start("file_system", tensors, numel);
  ASSERT_EQ(why, "");
  ASSERT_EQ(job.info()["strategy"], "file_system");
  const uint64_t tensor_bytes = job.info()["tensor_bytes"].get<uint64_t>();
  ASSERT_EQ(tensor_bytes, uint64_t{numel} * 4);

  const std::vector<std::string> files = job.files();
  ASSERT_EQ(files.size(), size_t{tensors}) << "one torch_<worker>_* file per returned tensor";

  // Live: every file is a segment held by the parent, its name naming the
  // worker that created it.
  auto ls = run_shmbpf("ls --json --match '/dev/shm/torch_*'");
  ASSERT_EQ(ls.code, 0) << ls.err;
  json segs = ls.json()["segments"];
  ASSERT_TRUE(segs.is_array()) << ls.out;
  std::set<std::string> listed;
  for (const auto &s : segs) {
    const std::string path = s["path"];
    if (!job.workers().contains(torch_pid(path)))
      continue; // another job's tensors
    SCOPED_TRACE(path);
    listed.insert(path);
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(s["kind"], "tmpfs");
    EXPECT_EQ(s["state"], "linked");
    EXPECT_EQ(s["ino"], st.st_ino);
    EXPECT_EQ(s["size"], st.st_size);
    EXPECT_EQ(s["bytes"], static_cast<uint64_t>(st.st_blocks) * 512);
    EXPECT_GE(s["bytes"].get<uint64_t>(), tensor_bytes);
    EXPECT_TRUE(has_pid(s["holders"], job.parent())) << s;
    EXPECT_EQ(s["pattern"], "torch");
    EXPECT_EQ(s["inferred_pid"], torch_pid(path)) << s;
    if (s["creator"].is_object()) { // a scan may not know it; if it does, a worker
      EXPECT_TRUE(job.workers().contains(s["creator"]["pid"].get<pid_t>())) << s;
    }
    EXPECT_EQ(s["orphan"], false) << s;
  }
  EXPECT_EQ(listed, std::set<std::string>(files.begin(), files.end())) << ls.out;

  // While the job lives nothing of it is an orphan, even with --min-age 0.
  for (pid_t w : job.workers()) {
    auto l = run_shmbpf("leaks --min-age 0 --match '/dev/shm/torch_" + std::to_string(w) + "_*'");
    EXPECT_EQ(l.code, 0) << l.out << l.err;
  }

  ASSERT_FALSE(job.shm_managers().empty()) << "file_system strategy starts torch_shm_manager";
  ASSERT_TRUE(job.kill_all()) << "the job's processes did not all die";
  const std::vector<std::string> left = job.files();
  ASSERT_EQ(left, files) << "SIGKILL leaves every file behind";
  const uint64_t want_bytes = resident_bytes(left);
  ASSERT_EQ(du_total(left), want_bytes);

  auto r = run_shmbpf("leaks --min-age 0 --json --match '/dev/shm/torch_*'");
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  json j = r.json();
  std::set<std::string> orphans;
  for (const auto &o : j["orphans"])
    if (job.workers().contains(torch_pid(o["path"].get<std::string>()))) {
      orphans.insert(o["path"].get<std::string>());
      EXPECT_EQ(o["orphan"], true) << o;
      EXPECT_TRUE(o["holders"].empty()) << o;
    }
  EXPECT_EQ(orphans, std::set<std::string>(left.begin(), left.end())) << r.out;
  bool torch_pattern = false;
  for (const auto &p : j["by_pattern"])
    torch_pattern |= p["pattern"] == "torch" && p["count"].get<uint64_t>() >= left.size();
  EXPECT_TRUE(torch_pattern) << r.out;

  // Exact totals, one worker's files at a time (other torch_* files may exist).
  uint64_t count = 0, bytes = 0;
  for (pid_t w : job.workers()) {
    auto rw =
        run_shmbpf("leaks --min-age 0 --json --match '/dev/shm/torch_" + std::to_string(w) + "_*'");
    ASSERT_EQ(rw.code, 1) << rw.out << rw.err;
    json jw = rw.json();
    count += jw["orphan_count"].get<uint64_t>();
    bytes += jw["orphan_bytes"].get<uint64_t>();
    EXPECT_EQ(jw["orphans"].size(), jw["orphan_count"].get<uint64_t>());
  }
  EXPECT_EQ(count, left.size());
  EXPECT_EQ(bytes, want_bytes) << "orphan_bytes must equal du -B1 of the leftover files";

  job.remove_files();
  EXPECT_TRUE(job.files().empty());
}

// The same job watched live: `shmbpf top` runs before the Pool starts, so
// its engine sees each torch_<worker>_* file being created by that worker
// (a creator from a BPF event, not the pid inferred from the name, which is
// all a scan has), then the SIGKILL turn every one into an orphan.
TEST(TorchE2E, FileSystemStrategyTopSeesWorkersCreateThenOrphansAfterKill) {
  SHMBPF_REQUIRE_TORCH();
  // One frame a second, at most 45 of them: the test needs about 15.
  TopFrames top({"top", "-b", "--json", "--by", "segments", "-d", "1", "-n", "45"});
  // The first frame comes once the BPF programs are attached and the
  // existing segments scanned. A machine where BPF cannot load (exit status
  // 2, the "cannot run here" status) skips, except under CI=true.
  if (!top.next(30s)) {
    const auto st = top.wait(2s);
    if (!in_ci() && st && WIFEXITED(*st) && WEXITSTATUS(*st) == 2)
      GTEST_SKIP() << "shmbpf top cannot run here: " << top.err();
    FAIL() << "no frame from shmbpf top (" << top.problem() << "); stderr: " << top.err();
  }

  TorchJob job;
  ASSERT_EQ(job.start("file_system", tensors, numel), "");
  const uint64_t ready_ns = boottime_ns();
  const uint64_t tensor_bytes = job.info()["tensor_bytes"].get<uint64_t>();
  const std::vector<std::string> files = job.files();
  ASSERT_EQ(files.size(), size_t{tensors}) << "one torch_<worker>_* file per returned tensor";
  std::map<pid_t, std::string> comms;
  for (pid_t w : job.workers())
    comms[w] = comm_of(w);

  // top stats files and rescans their holders once a second (the monitor's
  // sample period): a frame taken 1.5 s after a change includes it.
  constexpr uint64_t settle_ns = 1'500'000'000;
  const auto live = top.frame_after(ready_ns + settle_ns, 10s);
  ASSERT_TRUE(live) << top.problem() << "; stderr: " << top.err();
  const auto live_rows = torch_rows(*live, job.workers());
  EXPECT_EQ(keys_of(live_rows), std::set<std::string>(files.begin(), files.end())) << *live;
  std::map<pid_t, size_t> created;
  for (const auto &[path, s] : live_rows) {
    SCOPED_TRACE(path);
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(s["kind"], "tmpfs") << s;
    EXPECT_EQ(s["state"], "linked") << s;
    EXPECT_EQ(s["mount"], "/dev/shm") << s;
    EXPECT_EQ(s["ino"], st.st_ino) << s;
    EXPECT_EQ(s["size"], st.st_size) << s;
    EXPECT_GE(s["bytes"].get<uint64_t>(), tensor_bytes) << s;
    EXPECT_EQ(s["existed_before"], false) << "top saw it created: " << s;
    ASSERT_TRUE(s["creator"].is_object()) << "the live engine knows every creator: " << s;
    const pid_t creator = s["creator"]["pid"].get<pid_t>();
    EXPECT_EQ(creator, torch_pid(path)) << "the worker named in the file created it: " << s;
    ++created[creator];
    EXPECT_EQ(s["creator"]["comm"], comms[torch_pid(path)]) << s;
    EXPECT_EQ(s["creator"]["uid"], geteuid()) << s;
    EXPECT_EQ(s["creator"]["exited"], false) << s;
    EXPECT_TRUE(has_pid(s["holders"], job.parent())) << s;
    EXPECT_EQ(s["pattern"], "torch") << s;
    EXPECT_EQ(s["orphan"], false) << s;
  }
  for (pid_t w : job.workers())
    EXPECT_GE(created[w], 1u) << "worker " << w << " returned a tensor, so created a file";

  ASSERT_FALSE(job.shm_managers().empty()) << "file_system strategy starts torch_shm_manager";
  ASSERT_TRUE(job.kill_all()) << "the job's processes did not all die";
  const uint64_t killed_ns = boottime_ns();
  ASSERT_EQ(job.files(), files) << "SIGKILL leaves every file behind";

  const auto dead = top.frame_after(killed_ns + settle_ns, 10s);
  ASSERT_TRUE(dead) << top.problem() << "; stderr: " << top.err();
  const auto dead_rows = torch_rows(*dead, job.workers());
  EXPECT_EQ(keys_of(dead_rows), std::set<std::string>(files.begin(), files.end())) << *dead;
  for (const auto &[path, s] : dead_rows) {
    SCOPED_TRACE(path);
    ASSERT_TRUE(s["creator"].is_object()) << s;
    EXPECT_EQ(s["creator"]["pid"], torch_pid(path)) << s;
    EXPECT_EQ(s["creator"]["exited"], true) << s;
    EXPECT_TRUE(s["holders"].is_array() && s["holders"].empty()) << s;
    EXPECT_EQ(s["state"], "linked") << s;
    EXPECT_GE(s["bytes"].get<uint64_t>(), tensor_bytes) << s;
    EXPECT_EQ(s["orphan"], true) << "top counts orphans at any age: " << s;
  }

  // The header's orphan totals are over the same segments as the rows (every
  // segment, no filter), so they include the job's files.
  uint64_t orphan_rows = 0, orphan_row_bytes = 0, job_bytes = 0;
  for (const auto &s : (*dead)["rows"])
    if (s["orphan"] == true) {
      ++orphan_rows;
      orphan_row_bytes += s["bytes"].get<uint64_t>();
    }
  for (const auto &[path, s] : dead_rows)
    job_bytes += s["bytes"].get<uint64_t>();
  const json &totals = (*dead)["totals"];
  EXPECT_GE(totals["orphans"].get<uint64_t>(), files.size()) << totals;
  EXPECT_GE(totals["orphan_bytes"].get<uint64_t>(), job_bytes) << totals;
  EXPECT_EQ(totals["orphans"], orphan_rows) << totals;
  EXPECT_EQ(totals["orphan_bytes"], orphan_row_bytes) << totals;

  const auto st = top.stop();
  ASSERT_TRUE(st.has_value()) << "top did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(*st) && WEXITSTATUS(*st) == 0) << "wait status " << *st << top.err();
  job.remove_files();
  EXPECT_TRUE(job.files().empty());
}

TEST(TorchE2E, FileDescriptorStrategyUnlinkedSegmentsHeldByParent) {
  SHMBPF_REQUIRE_TORCH();
  TorchJob job;
  std::string why = job.start("file_descriptor", tensors, numel);
  ASSERT_EQ(why, "");
  ASSERT_EQ(job.info()["strategy"], "file_descriptor");
  const uint64_t tensor_bytes = job.info()["tensor_bytes"].get<uint64_t>();
  EXPECT_TRUE(job.files().empty()) << "file_descriptor unlinks its files at once";

  auto ls = run_shmbpf("ls --json -p " + std::to_string(job.parent()));
  ASSERT_EQ(ls.code, 0) << ls.err;
  json segs = ls.json()["segments"];
  ASSERT_TRUE(segs.is_array()) << ls.out;
  size_t found = 0;
  uint64_t total = 0;
  for (const auto &s : segs) {
    if (s["state"] != "unlinked" || !has_pid(s["holders"], job.parent()))
      continue;
    const std::string path = s["path"];
    if (!job.workers().contains(torch_pid(path)))
      continue;
    SCOPED_TRACE(path);
    ++found;
    total += s["bytes"].get<uint64_t>();
    EXPECT_GE(s["bytes"].get<uint64_t>(), tensor_bytes) << s;
    EXPECT_GE(s["size"].get<uint64_t>(), tensor_bytes) << s;
    EXPECT_EQ(s["kind"], "tmpfs") << s;
    EXPECT_EQ(s["mount"], "/dev/shm") << s;
    EXPECT_EQ(s["orphan"], false) << s;
  }
  EXPECT_EQ(found, size_t{tensors}) << "one unlinked segment per tensor: " << ls.out;
  EXPECT_GE(total, tensor_bytes * tensors);

  // Held by a live process: never a leak, even with --min-age 0.
  auto l = run_shmbpf("leaks --min-age 0 --json --match '*torch_*'");
  ASSERT_TRUE(l.code == 0 || l.code == 1) << l.out << l.err;
  const json orphans = l.json()["orphans"];
  for (const auto &o : orphans)
    EXPECT_FALSE(job.workers().contains(torch_pid(o["path"].get<std::string>()))) << o;

  // The last holder gone, the unlinked files are gone with their memory.
  ASSERT_TRUE(job.kill_all());
  auto after = run_shmbpf("ls --json --match '*torch_*'");
  ASSERT_EQ(after.code, 0) << after.err;
  const json remaining = after.json()["segments"];
  for (const auto &s : remaining)
    EXPECT_FALSE(job.workers().contains(torch_pid(s["path"].get<std::string>()))) << s;
}

} // namespace
} // namespace shmbpf::test
