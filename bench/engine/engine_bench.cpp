// CPU cost of the engine per event (Google Benchmark): the share of the
// consumer's time per event that is the model, without BPF, decoding or
// output.
#include "engine/synthetic.hpp"
#include "model/engine.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

using namespace shmbpf;

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
  const auto prefill = static_cast<uint64_t>(state.range(0));
  for (uint64_t i = 0; i < prefill; i++, ino++)
    engine.apply(bench::create_event(100 + i % 100, ino, bench::torch_path(100, ino), ts++));
  // Building the event is timed too: the decoder builds one per record anyway.
  for (auto _ : state) {
    engine.apply(bench::create_event(4242, ino, bench::torch_path(4242, ino), ts++));
    ino++;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_CreateIntoTable)->Arg(0)->Arg(100000);

} // namespace

BENCHMARK_MAIN();
