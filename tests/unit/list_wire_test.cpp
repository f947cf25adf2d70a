// ls's and leaks' request types: what the command line chose becomes a
// query string the daemon reads back unchanged, and the same filter.
#include "views/list_wire.hpp"

#include <gtest/gtest.h>

namespace shmbpf {
namespace {

// Through the wire as api_get sends it: fields, a query string, and back.
QueryFields over_the_wire(const QueryFields &fields) {
  auto parsed = parse_query_string(query_string(fields));
  EXPECT_TRUE(parsed) << parsed.error();
  return parsed ? *parsed : QueryFields{};
}

TEST(LsQuery, SegmentsSurviveTheRoundTrip) {
  LsQuery q;
  q.pid = 4242;
  q.container = "host";
  q.mount = "/dev/shm";
  q.kind = Kind::memfd;
  q.match = "/dev/shm/torch_* &x=1";
  auto back = LsQuery::from_request(q.path(), over_the_wire(q.fields()));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->by, ListBy::segments);
  EXPECT_FALSE(back->json); // the table
  EXPECT_EQ(back->pid, 4242u);
  EXPECT_EQ(back->container, "host");
  EXPECT_EQ(back->mount, "/dev/shm");
  EXPECT_EQ(back->kind, Kind::memfd);
  EXPECT_EQ(back->match, "/dev/shm/torch_* &x=1");

  // The filter is the same on both sides; "host" is the host's empty id.
  const SegmentFilter f = back->filter();
  EXPECT_EQ(f.pid, 4242u);
  EXPECT_EQ(f.container, "");
  EXPECT_EQ(f.mount, "/dev/shm");
  EXPECT_EQ(f.kind, Kind::memfd);
  EXPECT_EQ(f.path_glob, "/dev/shm/torch_* &x=1");
  EXPECT_EQ(q.filter().container, f.container);
}

TEST(LsQuery, EachListHasItsPathAndOnlyTheFormat) {
  for (ListBy by : {ListBy::processes, ListBy::containers, ListBy::mounts}) {
    LsQuery q;
    q.by = by;
    q.json = true;
    q.pid = 7; // a segment filter: not sent for the other lists
    EXPECT_TRUE(q.fields().empty());
    auto back = LsQuery::from_request(q.path(), q.fields());
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->by, by);
    EXPECT_TRUE(back->json);
    EXPECT_FALSE(back->pid);
    auto refused = LsQuery::from_request(q.path(), {{"pid", "7"}});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), "unknown parameter 'pid'");
  }
  EXPECT_EQ(LsQuery{}.path(), "/v1/segments");
  EXPECT_FALSE(LsQuery::from_request("/v1/leaks", {}));
  EXPECT_TRUE(LsQuery::is_list_path("/v1/mounts"));
  EXPECT_FALSE(LsQuery::is_list_path("/v1/leaks"));
}

TEST(LsQuery, BadParametersAreNamed) {
  auto why = [](const QueryFields &f) {
    auto q = LsQuery::from_request("/v1/segments", f);
    return q ? std::string("accepted") : q.error();
  };
  EXPECT_EQ(why({{"pid", "0"}}), "pid must be a whole number from 1 to 2147483647, not '0'");
  EXPECT_EQ(why({{"pid", "2147483648"}}),
            "pid must be a whole number from 1 to 2147483647, not '2147483648'");
  EXPECT_EQ(why({{"kind", "shm"}}), "kind must be tmpfs, memfd or sysv, not 'shm'");
  EXPECT_EQ(why({{"format", "yaml"}}), "format must be json or text, not 'yaml'");
  EXPECT_EQ(why({{"mount", "/a"}, {"mount", "/b"}}), "parameter 'mount' given more than once");
  EXPECT_EQ(why({{"who\x1b[2J", "x"}}), "unknown parameter 'who\\x1b[2J'");
  // A glob that can match nothing is refused, as ls --match refuses it.
  EXPECT_EQ(why({{"match", "/dev/shm/torch_[0-9*"}}),
            "match: '[' at offset 15 has no closing ']' (write \\[ for a '[')");
}

TEST(LeaksQuery, SurvivesTheRoundTrip) {
  LeaksQuery q;
  q.json = true;
  q.min_age_s = 0.1; // the shortest text that reads back the same
  q.window_s = 900;
  q.match = "/dev/shm/*";
  q.all_mounts = true;
  EXPECT_EQ(q.fields().find("min_age")->second, "0.1");
  auto back = LeaksQuery::from_fields(over_the_wire(q.fields()));
  ASSERT_TRUE(back) << back.error();
  EXPECT_TRUE(back->json);
  EXPECT_EQ(back->min_age_s, 0.1);
  EXPECT_EQ(back->window_s, 900);
  EXPECT_EQ(back->match, "/dev/shm/*");
  EXPECT_TRUE(back->all_mounts);
  EXPECT_EQ(back->scope(), OrphanScope::all_mounts);
  EXPECT_EQ(back->min_age_ns(), 100'000'000u);
  EXPECT_EQ(back->window_ns(), 900'000'000'000u);

  // Nothing given: leaks' defaults.
  auto plain = LeaksQuery::from_fields({});
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->min_age_s, kLeakMinAgeS);
  EXPECT_EQ(plain->window_s, 0);
  EXPECT_EQ(plain->scope(), OrphanScope::shared_memory);
  EXPECT_TRUE(plain->json);
  EXPECT_FALSE(LeaksQuery{}.fields().contains("window"));
}

TEST(LeaksQuery, BadParametersAreNamed) {
  auto why = [](const QueryFields &f) {
    auto q = LeaksQuery::from_fields(f);
    return q ? std::string("accepted") : q.error();
  };
  EXPECT_EQ(why({{"min_age", "-1"}}), "min_age must be a number of seconds, 0 or more, not '-1'");
  EXPECT_EQ(why({{"window", "nan"}}), "window must be a number of seconds, 0 or more, not 'nan'");
  EXPECT_EQ(why({{"all_mounts", "yes"}}), "all_mounts must be 1, true, 0 or false, not 'yes'");
  EXPECT_EQ(why({{"pid", "1"}}), "unknown parameter 'pid'");
  EXPECT_EQ(why({{"all_mounts", ""}}), "accepted"); // a bare flag
  EXPECT_EQ(why({{"match", "["}}),
            "match: '[' at offset 0 has no closing ']' (write \\[ for a '[')");
}

} // namespace
} // namespace shmbpf
