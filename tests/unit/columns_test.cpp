// One column set per kind of row, shared by `ls` and `top`
// (views/columns.hpp): both show the same titles in the same order.
#include "views/columns.hpp"
#include "views/ls_view.hpp"
#include "views/relations.hpp"
#include "views/top_frame.hpp"

#include "top_fixture.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace shmbpf::test {
namespace {

template <class Row> std::vector<std::string> titles(const ColumnSet<Row> &set) {
  std::vector<std::string> out;
  for (const auto &c : set)
    out.emplace_back(c.column.title);
  return out;
}

std::string joined(const std::vector<std::string> &titles, const std::string &gap) {
  std::string out;
  for (const auto &t : titles)
    out += (out.empty() ? "" : gap) + t;
  return out;
}

// The column titles line of top's view, on a wide screen.
std::string top_titles(TopView view) {
  const TopSnapshot snap = snapshot();
  TopState st;
  st.view = view;
  st.width = 300;
  st.height = 40;
  for (const TopLine &l : build_top_frame(snap, st).lines)
    if (l.style == TopStyle::columns)
      return l.text;
  return {};
}

// Whether line holds the titles in order, one or more blanks apart.
bool in_order(const std::string &line, const std::vector<std::string> &titles) {
  std::size_t at = 0;
  for (const auto &t : titles) {
    const auto pos = line.find(t, at);
    if (pos == std::string::npos || (at > 0 && pos == at))
      return false;
    at = pos + t.size();
  }
  return line.find_first_not_of(' ', at) == std::string::npos;
}

TEST(Columns, LsAndTopShowTheSameColumns) {
  const std::vector<ProcessInfo> procs;
  const std::vector<MountUsage> mounts;
  const Relations rel(procs, mounts, host_ns);
  const std::string header_end = "\n";
  EXPECT_EQ(processes_table({}, {}), joined(titles(process_columns()), "  ") + header_end);
  // Without a container in a pod, no POD or NAMESPACE column.
  EXPECT_EQ(containers_table({}, rel),
            joined(titles(container_columns_for({})), "  ") + header_end);
  ContainerInfo in_pod;
  in_pod.id = "abc";
  in_pod.pod_uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  EXPECT_NE(containers_table({in_pod}, rel).find("NAMESPACE"), std::string::npos);
  EXPECT_EQ(titles(container_columns_for({in_pod})), titles(container_columns()));
  EXPECT_EQ(titles(container_columns_for({})).size() + 2, titles(container_columns()).size());
  EXPECT_EQ(mounts_table({}, rel), joined(titles(mount_columns()), "  ") + header_end);
  EXPECT_EQ(segments_table({}, now), joined(titles(segment_columns()), "  ") + header_end);

  EXPECT_TRUE(in_order(top_titles(TopView::processes), titles(process_columns())))
      << top_titles(TopView::processes);
  EXPECT_TRUE(in_order(top_titles(TopView::containers), titles(container_columns_for({}))))
      << top_titles(TopView::containers);
  EXPECT_TRUE(in_order(top_titles(TopView::mounts), titles(mount_columns())))
      << top_titles(TopView::mounts);
  EXPECT_TRUE(in_order(top_titles(TopView::segments), titles(segment_columns())))
      << top_titles(TopView::segments);
  EXPECT_EQ(titles(process_columns()),
            (std::vector<std::string>{"PID", "USER", "COMM", "CONTAINER", "SEGS", "BYTES", "HELD",
                                      "CREATE/s", "UNHELD"}));
}

// A container's memory cgroup: the shared memory charged to it and its
// limit, "-" until read, "none" without a limit.
TEST(Columns, ContainersShowTheirShmemAndLimit) {
  const std::vector<ProcessInfo> procs;
  const std::vector<MountUsage> mounts;
  const Relations rel(procs, mounts, host_ns);
  ContainerInfo c;
  c.id = std::string(64, 'c');
  ContainerInfo host;
  host.memory = CgroupMemory{.shmem = 3u << 30, .usage = 5u << 30, .limit = {}};
  ContainerInfo limited = c;
  limited.memory = CgroupMemory{.shmem = 20u << 20, .usage = 24u << 20, .limit = {32u << 20}};
  const std::string text = containers_table({host, c, limited}, rel);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << text;
  EXPECT_NE(lines[0].find("SHMEM  LIMIT"), std::string::npos) << text;
  EXPECT_NE(lines[1].find("3.0G   none"), std::string::npos) << text;
  EXPECT_NE(lines[2].find("    -      -"), std::string::npos) << text;
  EXPECT_NE(lines[3].find("  20M    32M"), std::string::npos) << text;
}

TEST(Columns, UserNamesWhereKnownElseTheUid) {
  std::vector<ProcessInfo> procs = {proc(1, "a", 1, 1), proc(2, "b", 1, 1), proc(3, "c", 1, 1)};
  procs[1].uid = 0;
  procs[2].uid = 4242;
  int lookups = 0;
  const UserNames names = user_names(procs, [&](uint32_t uid) {
    ++lookups;
    return uid == 0 ? std::string("root") : uid == 1000 ? std::string("al\x1b") : std::string();
  });
  EXPECT_EQ(lookups, 3); // one per uid
  EXPECT_EQ(names.size(), 2u);
  const CellContext ctx{0, &names, nullptr};
  EXPECT_EQ(user_cell(0, ctx), "root");
  EXPECT_EQ(user_cell(1000, ctx), "al\\x1b");
  EXPECT_EQ(user_cell(4242, ctx), "4242");
  EXPECT_EQ(user_cell(0, CellContext{}), "0");
}

} // namespace
} // namespace shmbpf::test
