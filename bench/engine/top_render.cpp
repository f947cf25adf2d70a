// Time to build and draw one `shmbpf top` frame with N live segments: the
// snapshot queries top makes of the engine (as views/top_snapshot's
// take_top_snapshot), then build_top_frame and top_text, for each view, on an
// 80x24 screen. Prints the median of several frames per view.
//
//   top_render 100000
#include "engine/synthetic.hpp"
#include "model/engine.hpp"
#include "views/top_frame.hpp"
#include "views/top_rows.hpp"
#include "views/top_snapshot.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

namespace {

using namespace shmbpf;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time of this thread: what other load on the machine cannot inflate.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const uint64_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  const int frames = argc > 2 ? std::atoi(argv[2]) : 7;
  const uint32_t procs = 200;

  Engine engine;
  uint64_t ts = 1'000'000'000;
  for (uint64_t i = 0; i < n; i++) {
    uint32_t pid = 20000 + static_cast<uint32_t>(i % procs);
    engine.apply(bench::create_event(pid, 1000 + i, bench::torch_path(pid, i), ts++));
    engine.apply(bench::resize_event(pid, 1000 + i, 4096 * (1 + i % 16), ts++));
  }
  // Half the creators exit: their segments become orphans, as in a leak.
  for (uint32_t p = 0; p < procs; p += 2)
    engine.apply(bench::process_event(EventType::exit, 20000 + p, ts++));
  const uint64_t now = ts + 1'000'000'000;

  std::printf("segments=%zu frames=%d\n", engine.segment_count(), frames);
  for (TopView view :
       {TopView::processes, TopView::containers, TopView::mounts, TopView::segments}) {
    std::vector<double> snap_ms, frame_ms, total_ms, cpu_total_ms;
    // Each query of the snapshot on its own, to show where the time goes.
    std::vector<double> q_ms[5];
    size_t bytes = 0;
    for (int f = 0; f < frames; f++) {
      const double c0 = cpu_ms();
      auto t0 = Clock::now();
      TopSnapshot s;
      s.now_ns = now;
      auto tq = Clock::now();
      s.totals = engine.totals(now, 0);
      q_ms[0].push_back(ms_since(tq));
      tq = Clock::now();
      s.mounts = engine.mounts();
      q_ms[1].push_back(ms_since(tq));
      tq = Clock::now();
      s.processes = engine.processes(now);
      q_ms[2].push_back(ms_since(tq));
      tq = Clock::now();
      s.containers = engine.containers(now);
      q_ms[3].push_back(ms_since(tq));
      tq = Clock::now();
      // As shmbpf top does (take_top_snapshot): only the
      // segments view copies segments, and only the rows around the
      // selection of an 80x24 screen.
      TopState st;
      st.view = view;
      if (view == TopView::segments)
        fill_segment_page(s, engine, st, 0, false);
      q_ms[4].push_back(ms_since(tq));
      double snap = ms_since(t0);
      auto t1 = Clock::now();
      TopFrame frame = build_top_frame(s, st);
      bytes = top_text(frame).size();
      frame_ms.push_back(ms_since(t1));
      snap_ms.push_back(snap);
      total_ms.push_back(ms_since(t0));
      cpu_total_ms.push_back(cpu_ms() - c0);
    }
    std::printf("view=%s snapshot_ms=%.2f frame_ms=%.2f total_ms=%.2f cpu_total_ms=%.2f bytes=%zu "
                "totals_ms=%.2f mounts_ms=%.2f processes_ms=%.2f containers_ms=%.2f "
                "segments_ms=%.2f\n",
                std::string(to_string(view)).c_str(), median(snap_ms), median(frame_ms),
                median(total_ms), median(cpu_total_ms), bytes, median(q_ms[0]), median(q_ms[1]),
                median(q_ms[2]), median(q_ms[3]), median(q_ms[4]));
  }
  return 0;
}
