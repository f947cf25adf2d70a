// What tracefs lists of the kernel's hooks (TracepointList, FunctionList),
// read from a directory laid out as tracefs lays them out.
#include "probe/trace_lists.hpp"

#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace shmbpf {
namespace {

struct FakeTracefs {
  std::filesystem::path root;
  FakeTracefs() {
    char tmpl[] = "/tmp/shmbpf-tracefs-XXXXXX";
    if (!mkdtemp(tmpl))
      std::abort();
    root = tmpl;
  }
  ~FakeTracefs() { std::filesystem::remove_all(root); }
  void write(const std::string &name, const std::string &text) const {
    std::ofstream(root / name) << text;
  }
};

TEST(FunctionList, AFunctionIsListedByItsWholeNameWithOrWithoutAModule) {
  FakeTracefs t;
  t.write("available_filter_functions", "d_move\n"
                                        "shmem_unlink_extra\n"
                                        "d_instantiate_new\n"
                                        "shmem_setattr [shmem]\n"
                                        "shmem_fallocate\n");
  FunctionList f(t.root.string());
  EXPECT_EQ(f.missing("d_move"), ""); // the first line
  EXPECT_EQ(f.missing("shmem_setattr"), "");
  EXPECT_EQ(f.missing("shmem_fallocate"), ""); // the last line
  // A longer name that starts with it is not it.
  EXPECT_EQ(f.missing("shmem_unlink"), "not a function this kernel can trace");
  EXPECT_EQ(f.missing("d_instantiate"), "not a function this kernel can trace");
}

TEST(FunctionList, AListThatCannotBeReadMeansNoFunctionTracing) {
  FakeTracefs t; // no available_filter_functions
  FunctionList f(t.root.string());
  const std::string why = f.missing("d_move");
  EXPECT_EQ(why, "no function tracing here (" + t.root.string() +
                     "/available_filter_functions: No such file or directory)");
  EXPECT_EQ(f.missing("shmem_unlink"), why); // read once, the same answer
}

TEST(TracepointList, ATracepointIsListedAsCategoryColonName) {
  FakeTracefs t;
  t.write("available_events", "timestamp:ctime_ns_xchg\n"
                              "filemap:mm_filemap_delete_from_page_cache\n"
                              "timestamp:ctime_xchg_skip_more\n");
  TracepointList l(t.root.string());
  EXPECT_TRUE(l.has("ctime_ns_xchg"));
  EXPECT_TRUE(l.has("mm_filemap_delete_from_page_cache"));
  EXPECT_FALSE(l.has("ctime_xchg_skip"));
  EXPECT_FALSE(l.has("inode_set_ctime_to_ts"));
}

} // namespace
} // namespace shmbpf
