// `shmbpf top -b --json`: the shape of a frame and the order of its rows.
#include "views/top_json.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

using nlohmann::json;

TEST(TopJson, JsonFrameShape) {
  auto snap = snapshot();
  snap.lost = 3;
  auto st = batch_state();
  json j = json::parse(top_json(snap, st));
  EXPECT_EQ(j["view"], "processes");
  EXPECT_EQ(j["sort"], "bytes");
  EXPECT_TRUE(j["filter"].is_null());
  EXPECT_EQ(j["time"], "12:00:00");
  EXPECT_EQ(j["now_ns"], now);
  const json &t = j["totals"];
  EXPECT_EQ(t["tmpfs"]["segments"], 3);
  EXPECT_EQ(t["tmpfs"]["bytes"], 7 << 20);
  EXPECT_EQ(t["memfd"]["segments"], 1);
  EXPECT_EQ(t["sysv"]["bytes"], 0);
  EXPECT_EQ(t["orphans"], 1);
  EXPECT_EQ(t["lost"], 3);
  EXPECT_EQ(t["events"], 1234);
  EXPECT_DOUBLE_EQ(t["create_rate"].get<double>(), 2.5);
  ASSERT_EQ(j["mounts"].size(), 2u);
  // The container's /dev/shm is 93.75% full: alarming mounts come first.
  EXPECT_EQ(j["mounts"][0]["mountpoint"], "/dev/shm");
  EXPECT_EQ(j["mounts"][0]["owner"], "0123456789ab");
  EXPECT_EQ(j["mounts"][0]["alert"], true);
  EXPECT_EQ(j["mounts"][1]["owner"], "host");
  EXPECT_EQ(j["mounts"][1]["alert"], false);
  EXPECT_EQ(j["mounts"][1]["used_bytes"], 100 << 20);
  EXPECT_TRUE(j["scan_gaps"].is_array());
  EXPECT_TRUE(j["scan_gaps"].empty());
  snap.scan_gaps = {{25, "/dev/shm", {4, true}}};
  const json gaps = json::parse(top_json(snap, st))["scan_gaps"];
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0]["mountpoint"], "/dev/shm");
  EXPECT_EQ(gaps[0]["dev"], "0:25");
  EXPECT_EQ(gaps[0]["dirs_too_deep"], 4);
  EXPECT_EQ(gaps[0]["file_limit"], true);
  ASSERT_EQ(j["rows"].size(), 3u);
  const json &p = j["rows"][0];
  EXPECT_EQ(p["pid"], 100);
  EXPECT_EQ(p["comm"], "python3");
  EXPECT_EQ(p["user"], "alice");
  EXPECT_EQ(p["segments_created"], 2);
  EXPECT_EQ(p["bytes_created"], 6 << 20);
  EXPECT_EQ(p["unheld"], 1);
  EXPECT_TRUE(p["container"].is_null());
  EXPECT_EQ(j["rows"][1]["container"], ctr_id);

  st.view = TopView::containers;
  j = json::parse(top_json(snap, st));
  EXPECT_EQ(j["view"], "containers");
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["host"], true);
  EXPECT_EQ(j["rows"][1]["id"], ctr_id);
  EXPECT_EQ(j["rows"][1]["runtime"], "docker");
  EXPECT_NEAR(j["rows"][1]["shm_percent"].get<double>(), 93.75, 0.01);
  EXPECT_TRUE(j["rows"][0]["cgroup"].is_null());
  // A host cgroup's row: its path, no /dev/shm of its own.
  ContainerInfo top;
  top.cgroup = "/user.slice";
  snap.containers.push_back(top);
  j = json::parse(top_json(snap, st));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_EQ(j["rows"][2]["cgroup"], "/user.slice");
  EXPECT_EQ(j["rows"][2]["host"], true);
  EXPECT_TRUE(j["rows"][2]["shm_percent"].is_null());
  snap.containers.pop_back();

  st.view = TopView::segments;
  st.filter = "torch";
  st.sort = TopSort::age;
  j = json::parse(top_json(snap, st));
  EXPECT_EQ(j["filter"], "torch");
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["path"], "/dev/shm/torch_100_a_1");
  EXPECT_EQ(j["rows"][0]["age_s"], 600);
  EXPECT_EQ(j["rows"][1]["holders"], json::array({100, 200}));

  st.view = TopView::mounts;
  st.filter.clear();
  j = json::parse(top_json(snap, st));
  ASSERT_EQ(j["rows"].size(), 3u);
  EXPECT_TRUE(j["rows"][2]["seconds_to_full"].is_null());
}

// Each view's order for each sort key: the largest first, its keys
// compared in turn, then the view's tie-break (processes by pid, containers
// in the engine's order, mounts by mountpoint). Values tie on purpose.
TEST(TopJson, EverySortOrdersEveryView) {
  TopSnapshot snap = snapshot();
  auto order = [&](TopView view, TopSort sort, const char *field) {
    TopState st = batch_state();
    st.view = view;
    st.sort = sort;
    std::vector<std::string> out;
    const json j = json::parse(top_json(snap, st));
    for (const auto &row : j["rows"])
      out.push_back(row[field].is_string() ? row[field].get<std::string>() : row[field].dump());
    return out;
  };
  using V = std::vector<std::string>;

  snap.processes = {proc(1, "p1", 1, 10, 1.0), proc(2, "p2", 1, 10, 1.0), proc(3, "p3", 4, 3, 0.5),
                    proc(4, "p4", 1, 10, 1.0)};
  snap.processes[1].bytes_held = snap.processes[3].bytes_held = 5;
  snap.processes[1].segments_held = snap.processes[3].segments_held = 2;
  snap.processes[3].segments_unheld = 1;
  snap.processes[1].unlink_rate = snap.processes[3].unlink_rate = 2.0;
  EXPECT_EQ(order(TopView::processes, TopSort::bytes, "pid"), (V{"2", "4", "1", "3"}));
  EXPECT_EQ(order(TopView::processes, TopSort::count, "pid"), (V{"3", "4", "2", "1"}));
  EXPECT_EQ(order(TopView::processes, TopSort::rate, "pid"), (V{"2", "4", "1", "3"}));
  EXPECT_EQ(order(TopView::processes, TopSort::age, "pid"), (V{"1", "2", "3", "4"}));

  snap.containers.assign(4, ContainerInfo{});
  const char *ids[] = {"", "aaaa", "bbbb", "cccc"};
  const uint64_t bytes[] = {5, 9, 5, 1}, segs[] = {2, 2, 7, 1};
  const double rates[] = {1.0, 0.5, 1.0, 3.0};
  for (int i = 0; i < 4; ++i) {
    snap.containers[i].id = ids[i];
    snap.containers[i].bytes = bytes[i];
    snap.containers[i].segments = segs[i];
    snap.containers[i].create_rate = rates[i];
  }
  EXPECT_EQ(order(TopView::containers, TopSort::bytes, "id"), (V{"aaaa", "", "bbbb", "cccc"}));
  EXPECT_EQ(order(TopView::containers, TopSort::count, "id"), (V{"bbbb", "", "aaaa", "cccc"}));
  EXPECT_EQ(order(TopView::containers, TopSort::rate, "id"), (V{"cccc", "", "bbbb", "aaaa"}));
  EXPECT_EQ(order(TopView::containers, TopSort::age, "id"), (V{"", "aaaa", "bbbb", "cccc"}));

  snap.mounts = {mount("/a", host_ns, 31, 1 << 20, 5, 1), mount("/b", host_ns, 32, 1 << 20, 5, 3),
                 mount("/c", host_ns, 33, 1 << 20, 9, 3)};
  snap.mounts[1].growth_bytes_per_s = snap.mounts[2].growth_bytes_per_s = 10;
  EXPECT_EQ(order(TopView::mounts, TopSort::bytes, "mountpoint"), (V{"/c", "/a", "/b"}));
  EXPECT_EQ(order(TopView::mounts, TopSort::count, "mountpoint"), (V{"/b", "/c", "/a"}));
  EXPECT_EQ(order(TopView::mounts, TopSort::rate, "mountpoint"), (V{"/b", "/c", "/a"}));
}

} // namespace
} // namespace shmbpf::test
