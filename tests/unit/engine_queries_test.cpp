// The engine's segment queries (model/engine_queries.cpp): orphans and
// their age, names and what they tell of the creator, filters, and the
// container a segment belongs to.
#include "engine_fixture.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <map>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

namespace shmbpf {
namespace {

using namespace test;

TEST(Engine, OrphansHonourMinAgeHoldersAndCreatorExit) {
  Engine engine = with_host_shm();
  engine.apply(create(100, 1, "/dev/shm/lonely", sec(10)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(10)));
  engine.apply(create(300, 2, "/dev/shm/shared", sec(10)));
  engine.apply(open_file(400, 2, "/dev/shm/shared", sec(11)));
  engine.apply(create(500, 3, "/dev/shm/alive", sec(10)));

  EXPECT_TRUE(orphan_paths(engine, sec(100), 0).empty()); // every creator alive

  engine.apply(exit_of(100, sec(20)));
  engine.apply(exit_of(300, sec(20)));
  EXPECT_TRUE(orphan_paths(engine, sec(40), sec(60)).empty()); // 30 s old
  auto orphans = engine.orphans(sec(80), sec(60));
  ASSERT_EQ(orphans.size(), 1u); // shared is held by 400, alive's creator lives
  EXPECT_EQ(orphans[0].segment.path, "/dev/shm/lonely");
  EXPECT_EQ(orphans[0].age_ns, sec(70));
  EXPECT_EQ(orphans[0].segment.bytes, kMiB);
  EXPECT_TRUE(orphans[0].segment.creator.exited);

  // Once holders and creators are gone all three are orphans, largest first.
  engine.apply(exit_of(400, sec(21)));
  engine.apply(resize(500, 3, kMiB, 0, sec(21)));
  engine.apply(exit_of(500, sec(22)));
  EXPECT_EQ(orphan_paths(engine, sec(100), 0),
            (std::vector<std::string>{"/dev/shm/lonely", "/dev/shm/alive", "/dev/shm/shared"}));
}

TEST(Engine, PreexistingSegmentsAgeFromMtimeElseFromStart) {
  EngineConfig cfg;
  cfg.start_ns = sec(100);
  const int64_t boot_realtime_s = 1'700'000'000;
  cfg.realtime_offset_ns = boot_realtime_s * static_cast<int64_t>(kSec);
  Engine engine(cfg);
  engine.add_existing_file(existing(1, "/dev/shm/old", 4096, boot_realtime_s + 100 - 3600), kMntId,
                           "/dev/shm");
  engine.add_existing_file(existing(2, "/dev/shm/nomtime", 4096), kMntId, "/dev/shm");
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->existed_before);
  EXPECT_EQ(s->created_ns, 0u);
  EXPECT_FALSE(s->creator.known);
  EXPECT_EQ(s->creator.uid, 1000u); // the owner
  EXPECT_EQ(s->mountpoint, "/dev/shm");

  auto orphans = engine.orphans(sec(160), sec(30 * 60));
  ASSERT_EQ(orphans.size(), 1u);
  EXPECT_EQ(orphans[0].segment.path, "/dev/shm/old");
  EXPECT_EQ(orphans[0].age_ns, sec(3660));
  EXPECT_EQ(orphan_paths(engine, sec(160), sec(30)).size(), 2u); // nomtime: 60 s since start
  EXPECT_TRUE(orphan_paths(engine, sec(160), sec(61)).size() == 1u);

  // A holder found by the /proc scan takes it off the list.
  EXPECT_TRUE(engine.add_holder(4242, file_key(1)));
  EXPECT_EQ(orphan_paths(engine, sec(160), 0), std::vector<std::string>{"/dev/shm/nomtime"});
}

TEST(Engine, NameClassifier) {
  auto torch = classify_shm_name("/dev/shm/torch_4242_1804289383_17");
  EXPECT_EQ(torch.pattern, NamePattern::torch);
  EXPECT_EQ(torch.pid, 4242u);
  EXPECT_EQ(classify_shm_name("torch_1_2_3").pid, 1u);
  EXPECT_EQ(classify_shm_name("/dev/shm/psm_3f2a91bc").pattern, NamePattern::psm);
  EXPECT_EQ(classify_shm_name("/dev/shm/sem.mp-a1b2c3d4").pattern, NamePattern::sem);
  for (const char *none : {"/dev/shm/torch_", "/dev/shm/torch_abc_1", "/dev/shm/torch_12",
                           "/dev/shm/torch_12_", "/dev/shm/torch_99999999999_1_1", "/dev/shm/psm_",
                           "/dev/shm/sem.", "/dev/shm/x/torch", "pulse-shm-x"}) {
    EXPECT_EQ(classify_shm_name(none).pattern, NamePattern::none) << none;
    EXPECT_EQ(classify_shm_name(none).pid, 0u) << none;
  }
  EXPECT_EQ(classify_shm_name("/dev/shm/torch_5/psm_x").pattern, NamePattern::psm); // leaf only
  EXPECT_EQ(to_string(NamePattern::torch), "torch");
}

// The names the common producers give their shared memory, as their
// sources write them (docs/LEAKS.md, "Who made it").
TEST(Engine, NameClassifierKnowsTheCommonProducers) {
  const std::pair<const char *, NamePattern> named[] = {
      {"/dev/shm/nccl-a8Kq2Z", NamePattern::nccl},
      {"/dev/shm/nccl-shm-send-5f3a9c-0-1-2", NamePattern::nccl},
      {"/dev/shm/sgl_shm_sync_4242_1a2b3c4d", NamePattern::sglang},
      {"/dev/shm/sglang_loads_tokenizer_0f1e2d3c.shm", NamePattern::sglang},
      {"memfd:sglang_host_pool_0123456789abcdef0123456789abcdef", NamePattern::sglang},
      {"/dev/shm/VLLM_OBJECT_STORAGE_SHM_BUFFER", NamePattern::vllm},
      {"/dev/shm/VLLM_OBJECT_STORAGE_SHM_BUFFER_9f8e7d6c5b4a", NamePattern::vllm},
      {"/dev/shm/PostgreSQL.271741757", NamePattern::postgres},
      {"/dev/shm/plasmaAbC123", NamePattern::ray},
      {"/tmp/plasma0x9Yz8", NamePattern::ray},
      {"/dev/shm/nvidia_dali_Xy12Ab", NamePattern::dali},
      {"/dev/shm/vader_segment.node1.2f3a0001.3", NamePattern::mpi},
      {"/dev/shm/sm_segment.node1.1000.2f3a0001.0", NamePattern::mpi},
      {"/dev/shm/mpich_shar_tmpQ1w2E3", NamePattern::mpi},
      {"/dev/shm/joblib_memmapping_folder_4242_ab12_cd34/4242-1399-0a1b2c.pkl",
       NamePattern::joblib},
      {"/dev/shm/pulse-shm-2819231", NamePattern::pulseaudio},
      {"/dev/shm/.org.chromium.Chromium.a1B2c3", NamePattern::chromium},
      {"/dev/shm/.com.google.Chrome.Zz9Yy8", NamePattern::chromium},
      {"memfd:psm_3f2a91bc", NamePattern::psm},
  };
  for (const auto &[name, pattern] : named) {
    EXPECT_EQ(classify_shm_name(name).pattern, pattern) << name;
    EXPECT_EQ(classify_shm_name(name).pid, 0u) << name;
  }
  // Near misses: the prefix without what its producer puts after it.
  for (const char *none :
       {"/dev/shm/PostgreSQL.", "/dev/shm/PostgreSQL.12a", "/dev/shm/plasma",
        "/dev/shm/plasmaAbC12", "/dev/shm/plasmaAbC1234", "/dev/shm/plasma_a-b-c", "/dev/shm/nccl-",
        "/dev/shm/pulse-shm-", "/dev/shm/sglang_", "/dev/shm/joblib_memmapping_folder_1_2",
        "/dev/shm/joblib_memmapping_folder_1_2/", "/dev/shm/ncclx", "memfd:"})
    EXPECT_EQ(classify_shm_name(none).pattern, NamePattern::none) << none;
  EXPECT_EQ(to_string(NamePattern::postgres), "postgres");
  EXPECT_EQ(to_string(NamePattern::chromium), "chromium");
}

// A producer's name says shared memory on any tmpfs, but Chromium's: its
// prefix is its temporary files' too.
TEST(Engine, ANamedProducersFileIsSharedMemoryAnywhereButChromiums) {
  EXPECT_TRUE(is_shared_memory(Kind::tmpfs, NamePattern::ray, SegmentState::linked, "/tmp"));
  EXPECT_TRUE(is_shared_memory(Kind::tmpfs, NamePattern::mpi, SegmentState::linked, "/tmp"));
  EXPECT_FALSE(is_shared_memory(Kind::tmpfs, NamePattern::chromium, SegmentState::linked, "/tmp"));
  EXPECT_TRUE(
      is_shared_memory(Kind::tmpfs, NamePattern::chromium, SegmentState::linked, "/dev/shm"));
  EXPECT_FALSE(is_shared_memory(Kind::tmpfs, NamePattern::none, SegmentState::linked, "/tmp"));
}

TEST(Engine, TorchNamesOnPreexistingFilesInferTheCreator) {
  Engine engine(starting_at(sec(10)));
  engine.add_existing_file(existing(1, "/dev/shm/torch_4242_1804289383_0", kMiB), 0, "/dev/shm");
  engine.add_existing_file(existing(2, "/dev/shm/psm_3f2a91bc", kMiB), 0, "/dev/shm");
  auto s = engine.segment(file_key(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->pattern, NamePattern::torch);
  EXPECT_EQ(s->inferred_pid, 4242u);
  EXPECT_FALSE(s->creator.known);
  EXPECT_EQ(engine.segment(file_key(2))->pattern, NamePattern::psm);
  EXPECT_EQ(engine.segment(file_key(2))->inferred_pid, 0u);
  EXPECT_EQ(orphan_paths(engine, sec(20), 0).size(), 2u);

  engine.add_process(4242, 1, 1000, "python3", 0, 0);
  EXPECT_EQ(orphan_paths(engine, sec(20), 0), std::vector<std::string>{"/dev/shm/psm_3f2a91bc"});

  // A torch name from a segment we saw created keeps the real creator.
  engine.apply(create(77, 3, "/dev/shm/torch_77_5_1", sec(11)));
  EXPECT_EQ(engine.segment(file_key(3))->inferred_pid, 0u);
  EXPECT_EQ(engine.segment(file_key(3))->creator.pid, 77u);
}

TEST(Engine, SegmentFilters) {
  Engine engine;
  engine.set_mount(tmpfs_mount(kMntId, "/dev/shm", kDev));
  engine.set_mount(tmpfs_mount(40, "/run/user/1000", kOtherDev));
  engine.apply(create(100, 1, "/dev/shm/torch_100_1_0", sec(1)));
  engine.apply(create(100, 2, "/dev/shm/torch_100_1_1", sec(1)));
  engine.apply(create(200, 3, "/dev/shm/psm_abc", sec(1)));
  Event run = create(200, 1, "/run/user/1000/pulse-shm-1", sec(1));
  run.dev = kOtherDev;
  run.mnt_id = 40;
  engine.apply(run);
  engine.apply(memfd(200, 9, "wayland", sec(1), 0));
  engine.apply(shmget(200, 1, 0x10, 4096, sec(1)));
  engine.apply(unlink_file(100, "/dev/shm/torch_100_1_1", sec(2), 2));

  auto filter = [](auto set) {
    SegmentFilter f;
    set(f);
    return f;
  };
  auto paths = [&](const SegmentFilter &f) {
    std::vector<std::string> out;
    for (const auto &s : engine.segments(f))
      out.push_back(s.path);
    return out;
  };
  EXPECT_EQ(paths({}), (std::vector<std::string>{
                           "/dev/shm/psm_abc", "/dev/shm/torch_100_1_0", "/dev/shm/torch_100_1_1",
                           "/run/user/1000/pulse-shm-1", "SYSV00000010", "memfd:wayland"}));
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.pid = 100; })),
            (std::vector<std::string>{"/dev/shm/torch_100_1_0", "/dev/shm/torch_100_1_1"}));
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.mount = "/run/user/1000"; })),
            std::vector<std::string>{"/run/user/1000/pulse-shm-1"});
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.kind = Kind::memfd; })),
            std::vector<std::string>{"memfd:wayland"});
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.kind = Kind::sysv; })),
            std::vector<std::string>{"SYSV00000010"});
  EXPECT_EQ(paths(filter([](SegmentFilter &f) { f.path_glob = "/dev/shm/torch_*"; })),
            (std::vector<std::string>{"/dev/shm/torch_100_1_0", "/dev/shm/torch_100_1_1"}));
  EXPECT_EQ(paths(filter([](SegmentFilter &f) {
              f.pid = 100;
              f.state = SegmentState::linked;
            })),
            std::vector<std::string>{"/dev/shm/torch_100_1_0"});
  EXPECT_EQ(engine.segment(file_key(1))->mountpoint, "/dev/shm");
}

TEST(EngineQueries, SegmentsWithTimeCarryAgeAndOrphanVerdict) {
  Engine engine = with_host_shm();
  engine.apply(create(100, 1, "/dev/shm/left", sec(10)));
  engine.apply(resize(100, 1, kMiB, kMiB, sec(10)));
  engine.apply(create(200, 2, "/dev/shm/kept", sec(10)));
  engine.apply(exit_of(100, sec(11)));

  auto v = engine.segments({}, sec(100), sec(60));
  ASSERT_EQ(v.size(), 2u); // sorted by path
  EXPECT_EQ(v[0].path, "/dev/shm/kept");
  EXPECT_FALSE(v[0].orphan); // creator 200 is alive and holds it
  EXPECT_EQ(v[1].path, "/dev/shm/left");
  EXPECT_TRUE(v[1].orphan);
  EXPECT_EQ(v[1].age_ns, sec(90));
  // Too young for this min-age: not an orphan yet.
  EXPECT_FALSE(engine.segments({}, sec(30), sec(60))[1].orphan);
  // Without a time nothing is judged.
  EXPECT_FALSE(engine.segments()[1].age_ns.has_value());
}

TEST(EngineQueries, SegmentOfUnknownCreatorBelongsToItsMountsContainer) {
  const std::string id(64, 'a');
  Engine engine;
  engine.set_cgroup_path(11, "/system.slice/docker-" + id + ".scope");
  engine.set_cgroup_path(12, "/user.slice");
  engine.set_mount({40, 7001, "/dev/shm", 50, 64 * kMiB, 0}); // the container's own /dev/shm
  engine.set_mount({kMntId, 7000, "/dev/shm", kDev, 0, 0});   // the host's
  engine.add_process(500, 1, 0, "app", 11, 7001);
  engine.add_process(600, 1, 0, "bash", 12, 7000);
  TmpfsFile in_container = existing(9, "/dev/shm/c", 4096);
  in_container.dev = 50;
  engine.add_existing_file(in_container, 40, "/dev/shm");
  engine.add_existing_file(existing(8, "/dev/shm/h", 4096), kMntId, "/dev/shm");

  auto c = engine.segment(file_key(9, 50));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->container.id, id);
  EXPECT_EQ(c->container.runtime, "docker");
  EXPECT_EQ(engine.segment(file_key(8))->container.id, "");

  SegmentFilter f;
  f.container = id.substr(0, 12);
  auto v = engine.segments(f);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].key, file_key(9, 50));
  auto rows = engine.containers();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].id, id);
  EXPECT_EQ(rows[1].segments, 1u);

  // A host process joining that namespace makes it ambiguous: no container.
  engine.add_process(601, 1, 0, "nsenter", 12, 7001);
  EXPECT_EQ(engine.segment(file_key(9, 50))->container.id, "");
}

} // namespace
} // namespace shmbpf
