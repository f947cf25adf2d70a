// `shmbpf serve`'s pure parts: --listen's check, the log's lines, and what
// the endpoints answer before the live model is there.
#include "daemon/endpoints.hpp"
#include "daemon/listen.hpp"
#include "daemon/log.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shmbpf {
namespace {

TEST(Listen, NumericAddressesAndPorts) {
  auto a = ListenSetting::parse(ListenSetting::kDefault);
  ASSERT_TRUE(a) << a.error();
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, ListenSetting::kDefaultPort);
  EXPECT_FALSE(a->ipv6);
  EXPECT_EQ(a->text(), "127.0.0.1:19746");

  auto v6 = ListenSetting::parse("[::1]:9");
  ASSERT_TRUE(v6) << v6.error();
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(v6->ipv6);
  EXPECT_EQ(v6->port, 9);
  EXPECT_EQ(v6->text(), "[::1]:9");
  EXPECT_TRUE(ListenSetting::parse("0.0.0.0:65535"));
  EXPECT_TRUE(ListenSetting::parse("[::]:1"));
}

TEST(Listen, RefusesWhatIsNotAnAddressAndAPort) {
  for (const char *bad :
       {"", "19746", ":19746", "localhost:19746", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0",
        "127.0.0.1:65536", "127.0.0.1:80x", "127.0.0.1:-1", "::1:19746", "[::1]19746", "[::1",
        "[127.0.0.1]:1", "1.2.3.4.5:1", "127.0.0.1: 80"})
    EXPECT_FALSE(ListenSetting::parse(bad)) << bad;
  auto r = ListenSetting::parse("127.0.0.1:99999");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("1 to 65535"), std::string::npos) << r.error();
  // What the user typed is quoted escaped, on one line.
  r = ListenSetting::parse("a\nb:1");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
  EXPECT_NE(r.error().find("a\\nb:1"), std::string::npos) << r.error();
}

TEST(ServeLog, OneLineStampedInUtcToTheMillisecond) {
  // 2025-01-31 09:51:04.341 UTC
  const int64_t ns = 1738317064LL * 1'000'000'000 + 341'999'999;
  const LogFormat text = LogFormat::text;
  EXPECT_EQ(log_line(ns, LogLevel::info, text, "ready"),
            "2025-01-31T09:51:04.341Z shmbpf: ready\n");
  EXPECT_EQ(log_line(0, LogLevel::info, text, "x"), "1970-01-01T00:00:00.000Z shmbpf: x\n");
  EXPECT_EQ(log_line(0, LogLevel::warn, text, "x"),
            "1970-01-01T00:00:00.000Z shmbpf: warning: x\n");
  EXPECT_EQ(log_line(0, LogLevel::error, text, "x"), "1970-01-01T00:00:00.000Z shmbpf: error: x\n");
}

TEST(ServeLog, LogfmtAndJsonForLogPipelines) {
  const int64_t ns = 1738317064LL * 1'000'000'000 + 341'000'000;
  EXPECT_EQ(log_line(ns, LogLevel::warn, LogFormat::logfmt, R"(lost 3 "records" \ x)"),
            "time=2025-01-31T09:51:04.341Z level=warn msg=\"lost 3 \\\"records\\\" \\\\ x\"\n");
  EXPECT_EQ(log_line(ns, LogLevel::info, LogFormat::logfmt, "a\nb\x01"),
            "time=2025-01-31T09:51:04.341Z level=info msg=\"a\\nb\\x01\"\n");
  // JSON strings go through the one escaping rule first, as all of
  // shmbpf's JSON does: a newline is shown as \n, then JSON-escaped.
  EXPECT_EQ(log_line(ns, LogLevel::error, LogFormat::json, "a \"b\"\n"),
            R"({"time":"2025-01-31T09:51:04.341Z","level":"error","msg":"a \"b\"\\n"})"
            "\n");
}

TEST(ServeLog, LevelsAndFormatsByName) {
  EXPECT_EQ(parse_log_level("debug"), LogLevel::debug);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::warn);
  EXPECT_FALSE(parse_log_level("warning"));
  EXPECT_EQ(parse_log_format("logfmt"), LogFormat::logfmt);
  EXPECT_FALSE(parse_log_format("JSON"));
  EXPECT_EQ(to_string(LogLevel::error), "error");
}

TEST(Endpoints, BeforeTheModelIsThereOnlyHealthAnswersYes) {
  Endpoints e({"1.2.3", "", ""});
  EXPECT_EQ(e.get("/healthz").status, 200);
  EXPECT_EQ(e.get("/healthz").body, "ok\n");
  EXPECT_EQ(e.get("/readyz").status, 503);
  EXPECT_EQ(e.get("/metrics").status, 503);
  EXPECT_EQ(e.get("/nope").status, 404);
  const HttpReply landing = e.get("/");
  EXPECT_EQ(landing.status, 200);
  EXPECT_EQ(landing.content_type, "text/html; charset=utf-8");
  for (const char *link : {"href=\"/metrics\"", "href=\"/healthz\"", "href=\"/readyz\"", "1.2.3"})
    EXPECT_NE(landing.body.find(link), std::string::npos) << link;
  // Ready without a monitor attached is still not ready for /metrics.
  e.set_ready();
  EXPECT_EQ(e.get("/readyz").status, 200);
  EXPECT_EQ(e.get("/metrics").status, 503);
  e.heartbeat();
  EXPECT_EQ(e.get("/healthz").status, 200);
}

} // namespace
} // namespace shmbpf
