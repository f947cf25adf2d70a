// CPU cost of the engine per event (Google Benchmark): the share of the
// consumer's time per event that is the model, without BPF, decoding or
// output.
#include "engine/synthetic.hpp"
#include "model/apply_scan.hpp"
#include "model/engine.hpp"

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

namespace {

using namespace shmbpf;

// n files created by 100 processes, from inode ino on (both advance).
void prefill(Engine &engine, uint64_t n, uint64_t &ino, uint64_t &ts) {
  for (uint64_t i = 0; i < n; i++, ino++)
    engine.apply(bench::create_event(100 + i % 100, ino, bench::torch_path(100, ino), ts++));
}

// The POSIX shm cycle as the engine sees it: create, resize, unlink.
void BM_ShmCycle(benchmark::State &state) {
  Engine engine;
  const std::string path = "/dev/shm/shmbpf-bench-4242";
  uint64_t ts = 1'000'000'000, ino = 1000;
  for (auto _ : state) {
    engine.apply(bench::create_event(4242, ino, path, ts++));
    engine.apply(bench::resize_event(4242, ino, 16384, ts++));
    engine.apply(bench::unlink_event(4242, ino, path, ts++));
    ino++;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 3);
}
BENCHMARK(BM_ShmCycle);

// Creates into a table that already holds state.range(0) segments.
void BM_CreateIntoTable(benchmark::State &state) {
  Engine engine;
  uint64_t ts = 1'000'000'000, ino = 1000;
  prefill(engine, static_cast<uint64_t>(state.range(0)), ino, ts);
  // Building the event is timed too: the decoder builds one per record anyway.
  for (auto _ : state) {
    engine.apply(bench::create_event(4242, ino, bench::torch_path(4242, ino), ts++));
    ino++;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_CreateIntoTable)->Arg(0)->Arg(100000);

// The engine's share alone: the same creates with the events built outside
// the timed region (in batches), into a table of state.range(0) that grows.
void BM_CreatePrebuilt(benchmark::State &state) {
  Engine engine;
  uint64_t ts = 1'000'000'000, ino = 1000;
  prefill(engine, static_cast<uint64_t>(state.range(0)), ino, ts);
  std::vector<Event> batch;
  size_t next = 0;
  for (auto _ : state) {
    if (next == batch.size()) {
      state.PauseTiming();
      batch.clear();
      for (int k = 0; k < 4096; k++, ino++)
        batch.push_back(bench::create_event(4242, ino, bench::torch_path(4242, ino), ts++));
      next = 0;
      state.ResumeTiming();
    }
    engine.apply(batch[next++]);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_CreatePrebuilt)->Arg(100000);

// Steady state: a table of 100,000 where each create is paid for by an
// unlink of an unheld file (no growth: slots and cells are reused), events
// prebuilt. Items are events (a create and an unlink per iteration).
void BM_CreateUnlinkSteady(benchmark::State &state) {
  Engine engine;
  uint64_t ts = 1'000'000'000;
  constexpr uint64_t kTable = 100000;
  for (uint64_t i = 0; i < kTable; i++)
    engine.apply(bench::create_event(100 + i % 100, 1000 + i, bench::torch_path(100, i), ts++));
  for (uint32_t p = 0; p < 100; p++)
    engine.apply(bench::process_event(EventType::exit, 100 + p, ts++)); // nobody holds them
  std::vector<Event> batch;
  size_t next = 0;
  uint64_t n = 0; // the oldest file is n, the next new one n + kTable
  for (auto _ : state) {
    if (next == batch.size()) {
      state.PauseTiming();
      batch.clear();
      for (int k = 0; k < 2048; k++, n++) {
        batch.push_back(bench::unlink_event(4242, 1000 + n, bench::torch_path(100, n), ts++));
        batch.push_back(
            bench::create_event(4242, 1000 + n + kTable, bench::torch_path(100, n + kTable), ts++));
      }
      // The creator's holds end here, so the files the next batch unlinks
      // are unheld, as the prefilled ones are.
      engine.apply(bench::process_event(EventType::exit, 4242, ts++));
      next = 0;
      state.ResumeTiming();
    }
    engine.apply(batch[next++]);
    engine.apply(batch[next++]);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * 2);
}
BENCHMARK(BM_CreateUnlinkSteady);

// A rescan's engine update (sources/bootstrap.cpp reconcile()) when
// nothing changed: state.range(0) files, each mapped by one of 100 live
// processes. It runs on the consumer thread: the longer it takes, the
// longer events wait in the ring. Items are files.
void BM_ReconcileUnchanged(benchmark::State &state) {
  const auto files = static_cast<uint64_t>(state.range(0));
  SystemScan scan;
  ScannedFs fs{bench::kShmDev, bench::kShmMntId, "/dev/shm", {}, "/dev/shm", {}};
  for (uint32_t p = 0; p < 100; p++) {
    ScannedProcess proc;
    proc.id.pid = 100 + p;
    proc.id.ppid = 1;
    proc.id.comm = "python3";
    scan.processes.push_back(proc);
  }
  for (uint64_t i = 0; i < files; i++) {
    TmpfsFile f;
    f.dev = bench::kShmDev;
    f.ino = 1000 + i;
    f.path = bench::torch_path(100, i);
    f.leaf = f.path.substr(9);
    f.size = f.bytes = 16384;
    f.nlink = 1;
    HeldFile h;
    h.dev = f.dev;
    h.ino = f.ino;
    h.via_map = true;
    h.path = f.path;
    scan.processes[i % 100].holdings.push_back(h);
    fs.files.push_back(std::move(f));
  }
  scan.filesystems.push_back(std::move(fs));
  Engine engine;
  bootstrap(engine, scan);
  uint64_t now = 2'000'000'000;
  for (auto _ : state)
    reconcile(engine, scan, now++);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * files));
}
BENCHMARK(BM_ReconcileUnchanged)->Arg(100000)->Unit(benchmark::kMillisecond);

} // namespace

BENCHMARK_MAIN();
