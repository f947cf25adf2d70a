// The files a root serve writes, attacked as docs/SECURITY.md says they
// were: a symlink planted at the export path or swapped in before the
// SIGHUP logrotate sends, an attacker's file left at the path, a FIFO that
// would hang the daemon before it binds, directories another user owns or
// may write in, and links planted at the state directory's temporary
// names. Each must fail: nothing written through, the daemon refusing at
// once with one line (status 2), or going on without the file.
#include "attack/attacker.hpp"
#include "daemon/state_file.hpp"
#include "e2e/background.hpp"
#include "e2e/export_records.hpp"
#include "e2e/run_cli.hpp"
#include "e2e/serve_http.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace shmbpf::test {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string read_text(const fs::path &p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A file of root's that nobody may write: what an attack aims at.
struct Victim {
  fs::path path;
  explicit Victim(const fs::path &dir) : path(dir / "victim") {
    std::ofstream(path) << "root's own\n";
    ::chmod(path.c_str(), 0600);
  }
  bool untouched() const { return read_text(path) == "root's own\n"; }
};

// serve with the flags given, expected to refuse at once: status 2 within
// seconds (a FIFO must not block it), one line on stderr naming what
// (a flag, or the socket).
void expect_refused(const std::vector<std::string> &flags, const std::string &what,
                    const std::string &why) {
  std::vector<std::string> args = {"serve", "--listen", "127.0.0.1:" + std::to_string(free_port())};
  args.insert(args.end(), flags.begin(), flags.end());
  ShmbpfProcess serve(args);
  const auto start = Clock::now();
  expect_exit_code(serve.wait(std::chrono::seconds(20)), 2);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  const auto lines = lines_of(serve.err());
  ASSERT_EQ(lines.size(), 1u) << serve.err();
  EXPECT_TRUE(lines[0].starts_with("shmbpf: " + what + ": ")) << lines[0];
  EXPECT_NE(lines[0].find(why), std::string::npos) << lines[0];
  EXPECT_EQ(serve.out(), "");
}

const std::vector<std::string> kNoState = {"--no-state", "--no-socket"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(OwnFiles, ASymlinkAtTheExportPathIsNotFollowed) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  Victim victim(dir.path);
  const fs::path link = dir.path / "audit.ndjson";
  fs::create_symlink(victim.path, link);
  expect_refused(with(kNoState, {"--export-file", link}), "--export-file", "symbolic link");
  EXPECT_TRUE(victim.untouched());
}

TEST(OwnFiles, AFifoAtTheExportPathIsRefusedWithoutBlocking) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  const fs::path fifo = dir.path / "audit.ndjson";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  expect_refused(with(kNoState, {"--export-file", fifo}), "--export-file", "not a regular file");
  // With a reader too: it opens, and is refused all the same.
  const int reader = open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  expect_refused(with(kNoState, {"--export-file", fifo}), "--export-file", "not a regular file");
  close(reader);
}

TEST(OwnFiles, AnotherUsersFileOrDirectoryIsRefused) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  Victim victim(dir.path);
  // nobody's directory (made by nobody in one everyone may write in), with
  // nobody's link in it, and nobody's file left at the path.
  const fs::path open_dir = dir.path / "open";
  fs::create_directory(open_dir);
  ::chmod(open_dir.c_str(), 01777);
  ::chmod(dir.path.c_str(), 0755);
  const fs::path theirs = open_dir / "theirs";
  ASSERT_TRUE(as_nobody("mkdir -m 0755 " + theirs.string() + " && ln -s " + victim.path.string() +
                        " " + (theirs / "audit.ndjson").string() + " && touch " +
                        (theirs / "left.ndjson").string() + " && chmod 0666 " +
                        (theirs / "left.ndjson").string()));
  expect_refused(with(kNoState, {"--export-file", theirs / "audit.ndjson"}), "--export-file",
                 "belongs to uid 65534");
  expect_refused(with(kNoState, {"--export-file", theirs / "left.ndjson"}), "--export-file",
                 "belongs to uid 65534");
  // A directory of root's that every user may write in (/tmp's mode).
  expect_refused(with(kNoState, {"--export-file", open_dir / "audit.ndjson"}), "--export-file",
                 "writable by every user");
  expect_refused({"--no-socket", "--state-dir", open_dir}, "--state-dir", "writable by every user");
  expect_refused({"--no-socket", "--state-dir", theirs}, "--state-dir", "belongs to uid 65534");
  expect_refused({"--no-state", "--socket", theirs / "sock"},
                 "socket " + (theirs / "sock").string(), "belongs to uid 65534");
  EXPECT_TRUE(victim.untouched());
  EXPECT_FALSE(fs::exists(open_dir / "audit.ndjson"));
}

TEST(OwnFiles, AFileLeftAtTheExportPathBecomesRootsAlone) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  const fs::path file = dir.path / "audit.ndjson";
  std::ofstream(file) << "";
  ::chmod(file.c_str(), 0666); // everyone would read every event
  const int port = free_port();
  ShmbpfProcess serve(with({"serve", "--listen", "127.0.0.1:" + std::to_string(port)},
                           with(kNoState, {"--export-file", file})));
  SHMBPF_SERVE_READY(serve, port);
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  serve.signal(SIGTERM);
  expect_exit_code(serve.wait(std::chrono::seconds(20)), 0);
}

TEST(OwnFiles, ASymlinkSwappedInBeforeSighupIsNotWrittenThrough) {
  SHMBPF_REQUIRE_ROOT();
  TempDir dir;
  Victim victim(dir.path);
  const fs::path file = dir.path / "audit.ndjson";
  const int port = free_port();
  ShmbpfProcess serve(with({"serve", "--listen", "127.0.0.1:" + std::to_string(port)},
                           with(kNoState, {"--export-file", file})));
  SHMBPF_SERVE_READY(serve, port);
  // logrotate's move, then a link where the new file would be made.
  fs::rename(file, dir.path / "audit.ndjson.1");
  fs::create_symlink(victim.path, file);
  serve.signal(SIGHUP);
  // Events keep coming; none reaches the victim, and the failed reopen is
  // counted and said.
  const std::string shm = "/dev/shm/shmbpf-attack-hup-" + std::to_string(getpid());
  std::optional<double> errors;
  for (auto end = Clock::now() + std::chrono::seconds(15); Clock::now() < end;) {
    { std::ofstream(shm) << "x"; }
    fs::remove(shm);
    if (auto m = get(port, "/metrics"))
      errors = metric(m->body, "shmbpf_export_errors_total", {});
    if (errors && *errors >= 1)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(errors && *errors >= 1);
  EXPECT_TRUE(victim.untouched());
  EXPECT_TRUE(fs::is_symlink(file));
  serve.signal(SIGTERM);
  serve.wait(std::chrono::seconds(20));
  EXPECT_NE(serve.err().find("symbolic link"), std::string::npos) << serve.err();
  EXPECT_TRUE(victim.untouched());
}

TEST(OwnFiles, LinksAtTheStateFilesTemporaryNamesAreReplacedNotFollowed) {
  TempDir dir;
  Victim victim(dir.path);
  const fs::path state = dir.path / "state";
  fs::create_directory(state);
  ::chmod(state.c_str(), 0700);
  // The names this process would use, planted before it uses them.
  const std::string pid = std::to_string(getpid());
  fs::create_symlink(victim.path, state / (".probe." + pid));
  fs::create_symlink(victim.path, state / ("state.tmp." + pid));
  auto f = StateFile::open(state);
  ASSERT_TRUE(f) << f.error();
  ASSERT_TRUE(f->save("{}\n")) << "the state file";
  EXPECT_EQ(read_text(state / "state"), "{}\n");
  EXPECT_TRUE(victim.untouched());
  EXPECT_FALSE(fs::exists(state / (".probe." + pid)));
}

} // namespace
} // namespace shmbpf::test
