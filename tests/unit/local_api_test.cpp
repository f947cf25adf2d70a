// `shmbpf serve`'s unix socket without BPF: --socket's checks, what makes a
// path ready to bind (a stale socket replaced, a live one refused), the
// server on a socket (its mode, its removal), the client's errors, and
// what the local API answers before the model is there.
#include "daemon/api_client.hpp"
#include "daemon/endpoints.hpp"
#include "daemon/http_server.hpp"
#include "daemon/local_api.hpp"
#include "daemon/unix_socket.hpp"
#include "facts/result.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace shmbpf {
namespace {

// A fresh directory under /tmp, removed with what is left in it.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/shmbpf-socket-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

// A socket bound at path; listening unless told otherwise.
int bound_socket(const std::string &path, bool listening) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a), 0) << std::strerror(errno);
  if (listening) {
    EXPECT_EQ(listen(fd, 4), 0);
  }
  return fd;
}

int fatal_status(const std::function<void()> &fn, std::string *what = nullptr) {
  try {
    fn();
  } catch (const FatalError &e) {
    if (what)
      *what = e.what();
    return e.exit_code();
  }
  return 0;
}

TEST(SocketSetting, PathsThatCannotNameASocket) {
  EXPECT_EQ(SocketSetting::problem(SocketSetting::kDefault), "");
  EXPECT_EQ(SocketSetting::problem("relative.sock"), "");
  EXPECT_NE(SocketSetting::problem(""), "");
  EXPECT_NE(SocketSetting::problem("/run/shmbpf/"), "");
  EXPECT_NE(SocketSetting::problem(std::string("/tmp/a\0b", 8)), "");
  EXPECT_EQ(SocketSetting::problem("/" + std::string(106, 'a')), "");
  const std::string why = SocketSetting::problem("/" + std::string(107, 'a'));
  EXPECT_NE(why.find("at most 107"), std::string::npos) << why;
}

TEST(SocketSetting, GroupsByNameOrNumber) {
  auto root = socket_group("root");
  ASSERT_TRUE(root) << root.error();
  EXPECT_EQ(*root, 0u);
  auto n = socket_group("0");
  ASSERT_TRUE(n) << n.error();
  EXPECT_EQ(*n, 0u);
  // A number no group has, and the one chown takes for "no change".
  for (const char *bad : {"48213", "4294967295"}) {
    auto none = socket_group(bad);
    ASSERT_FALSE(none) << bad;
    EXPECT_NE(none.error().find("no group has the id"), std::string::npos) << none.error();
  }
  auto none = socket_group("no-such-group-shmbpf");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("no-such-group-shmbpf"), std::string::npos) << none.error();
}

TEST(PrepareSocketPath, MakesTheDirectoryAndReplacesOnlyAStaleSocket) {
  TempDir dir;
  // A missing directory is made, 0755; a missing grandparent is refused.
  const std::string sock = dir.path + "/run/api.sock";
  prepare_socket_path(sock);
  struct stat st {};
  ASSERT_EQ(stat((dir.path + "/run").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  std::string what;
  EXPECT_EQ(fatal_status([&] { prepare_socket_path(dir.path + "/a/b/c.sock"); }, &what), 2);
  EXPECT_NE(what.find("cannot make its directory"), std::string::npos) << what;

  // A socket nobody listens on is the file of a daemon gone: removed.
  close(bound_socket(sock, false));
  ASSERT_EQ(lstat(sock.c_str(), &st), 0);
  prepare_socket_path(sock);
  EXPECT_NE(lstat(sock.c_str(), &st), 0);

  // One a daemon listens on is refused and left alone.
  const int live = bound_socket(sock, true);
  EXPECT_EQ(fatal_status([&] { prepare_socket_path(sock); }, &what), 2);
  EXPECT_NE(what.find("listens there already"), std::string::npos) << what;
  EXPECT_EQ(lstat(sock.c_str(), &st), 0);
  close(live);

  // Something that is not a socket is never removed.
  const std::string file = dir.path + "/file";
  std::ofstream(file) << "data";
  EXPECT_EQ(fatal_status([&] { prepare_socket_path(file); }, &what), 2);
  EXPECT_NE(what.find("not a socket"), std::string::npos) << what;
  EXPECT_EQ(lstat(file.c_str(), &st), 0);
  EXPECT_EQ(fatal_status([&] { prepare_socket_path(file + "/x.sock"); }), 2);
}

TEST(HttpServerOnASocket, Mode0660AnsweredAndRemovedAtTheEnd) {
  TempDir dir;
  const std::string sock = dir.path + "/shmbpf.sock";
  std::string seen_query;
  {
    HttpServer server(UnixSocketAddress{sock, std::nullopt},
                      [&](std::string_view path, const HttpQuery &q) {
                        for (const auto &[k, v] : q)
                          seen_query += k + "=" + v + ";";
                        return HttpReply{200, "text/plain", "at " + std::string(path), {}};
                      });
    struct stat st {};
    ASSERT_EQ(lstat(sock.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, SocketSetting::kMode);
    // A second server on the same path is refused, and the first keeps it.
    EXPECT_EQ(fatal_status([&] {
                HttpServer second(UnixSocketAddress{sock, std::nullopt},
                                  [](std::string_view, const HttpQuery &) { return HttpReply{}; });
              }),
              2);
    ASSERT_EQ(lstat(sock.c_str(), &st), 0);

    const ApiReply r = api_get(sock, "/v1/x", {{"filter", "a b&c"}, {"pid", "1"}});
    EXPECT_EQ(r.body, "at /v1/x");
    EXPECT_EQ(seen_query, "filter=a b&c;pid=1;");
  }
  struct stat st {};
  EXPECT_NE(lstat(sock.c_str(), &st), 0) << "the socket outlived its server";
}

TEST(ApiClient, NoDaemonIsAClearErrorWithStatus2) {
  TempDir dir;
  std::string what;
  EXPECT_EQ(fatal_status([&] { api_get(dir.path + "/none.sock", "/v1/segments"); }, &what), 2);
  EXPECT_NE(what.find("no shmbpf serve at " + dir.path + "/none.sock"), std::string::npos) << what;
  EXPECT_NE(what.find("start it with sudo shmbpf serve"), std::string::npos) << what;
  // A stale socket: connection refused, the same advice.
  close(bound_socket(dir.path + "/stale.sock", false));
  EXPECT_EQ(fatal_status([&] { api_get(dir.path + "/stale.sock", "/"); }, &what), 2);
  EXPECT_NE(what.find("Connection refused"), std::string::npos) << what;
}

TEST(LocalApi, BadRequestsAreNamedAndNothingIsReadBeforeReady) {
  Endpoints endpoints({"1.2.3", "", ""});
  const LocalApi api(endpoints);
  // Not ready: the model is not there yet.
  EXPECT_EQ(api.get("/v1/segments", {}).status, 503);
  EXPECT_EQ(api.get("/v1/leaks", {{"min_age", "5"}}).status, 503);
  EXPECT_EQ(api.get("/v1/top", {{"view", "mounts"}}).status, 503);
  // What is not under /v1/ is answered as over TCP.
  EXPECT_EQ(api.get("/healthz", {}).status, 200);
  EXPECT_EQ(api.get("/readyz", {}).status, 503);
  EXPECT_EQ(api.get("/v1/nothing", {}).status, 404);

  struct Bad {
    const char *path;
    HttpQuery query;
    const char *named;
  };
  for (const Bad &b : std::vector<Bad>{
           {"/v1/segments", {{"colour", "red"}}, "colour"},
           {"/v1/segments", {{"pid", "0"}}, "pid"},
           {"/v1/segments", {{"pid", "1"}, {"pid", "2"}}, "more than once"},
           {"/v1/segments", {{"kind", "disk"}}, "kind"},
           {"/v1/segments", {{"format", "xml"}}, "format"},
           {"/v1/processes", {{"pid", "1"}}, "pid"},
           {"/v1/leaks", {{"min_age", "-1"}}, "min_age"},
           {"/v1/leaks", {{"min_age", "inf"}}, "min_age"},
           {"/v1/leaks", {{"all_mounts", "maybe"}}, "all_mounts"},
           {"/v1/top", {{"view", "files"}}, "view"},
           {"/v1/top", {{"format", "html"}}, "format"},
           {"/v1/top", {{"height", "1000000000000"}}, "height"},
           {"/v1/top", {{"width", "10001"}}, "width"},
           {"/v1/top", {{"page_rows", "99999"}}, "page_rows"},
           {"/v1/top", {{"format", "text"}, {"clock", "\x1b]0;pwned\x07\x1b[2J"}}, "clock"},
           {"/v1/top", {{"clock", std::string(33, '9')}}, "clock"},
       }) {
    const HttpReply r = api.get(b.path, b.query);
    EXPECT_EQ(r.status, 400) << b.path << " " << b.named;
    EXPECT_NE(r.body.find(b.named), std::string::npos) << r.body;
  }
}

TEST(LocalApi, AWindowLongerThanTheHistoryIsRefused) {
  Endpoints endpoints({"1.2.3", "", ""});
  const UsageLog usage;
  const LocalApi api(endpoints, &usage);
  for (const char *bad : {"900.5", "3600", "-5", "soon", "nan"}) {
    const HttpReply r = api.get("/v1/leaks", {{"window", bad}});
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("window"), std::string::npos) << r.body;
  }
  const HttpReply over = api.get("/v1/leaks", {{"window", "3600"}});
  EXPECT_EQ(over.body, "window must be at most 900 seconds: the daemon keeps usage samples for "
                       "that long, not 3600\n");
  // Within the history: refused only for want of a model (not ready).
  for (const char *good : {"0", "30", "900"})
    EXPECT_EQ(api.get("/v1/leaks", {{"window", good}}).status, 503) << good;
  // An API without a history takes no window at all.
  const LocalApi bare(endpoints);
  EXPECT_EQ(bare.get("/v1/leaks", {{"window", "30"}}).status, 400);
  EXPECT_EQ(bare.get("/v1/leaks", {{"window", "0"}}).status, 503);
}

TEST(LocalApi, TcpKnowsNoPathWithSegmentNames) {
  Endpoints endpoints({"1.2.3", "", ""});
  for (const char *path :
       {"/v1/segments", "/v1/processes", "/v1/containers", "/v1/mounts", "/v1/leaks", "/v1/top"})
    EXPECT_EQ(endpoints.get(path).status, 404) << path;
}

} // namespace
} // namespace shmbpf
