#include "terminal/trace_loop.hpp"

#include "facts/result.hpp"
#include "live/signals.hpp"
#include "sources/clock.hpp"
#include "terminal/output.hpp"
#include "views/program_stats.hpp"
#include "views/trace_view.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

namespace shmbpf {

int run_trace_loop(Session &session, const TraceLoopOptions &opts) {
  // Lines collect in one buffer that goes out with one write(2) per poll
  // (or per kFlushAt bytes in a long burst), not one per line.
  constexpr size_t kFlushAt = 1 << 20;
  TraceFormatter fmt(TraceClock{boot_to_realtime_ns()});
  std::string buf;
  buf.reserve(kFlushAt + 4096);
  Output out;
  auto flush = [&] {
    out.write(buf);
    buf.clear();
  };
  auto emit = [&](Event &e) {
    if (!out.ok() || !opts.filter.matches(e))
      return;
    if (opts.json)
      fmt.append_json(buf, e);
    else
      fmt.append_line(buf, e);
    buf += '\n';
    if (buf.size() >= kFlushAt)
      flush();
  };

  if (!opts.json) {
    buf += trace_header();
    buf += '\n';
  }
  flush();

  auto start = std::chrono::steady_clock::now();
  while (!stop_requested() && out.ok()) {
    if (opts.duration_s > 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::duration<double>(opts.duration_s))
      break;
    int n = session.poll(100, emit);
    if (n < 0 && n != -EINTR)
      throw FatalError("reading the ring buffer", std::to_string(-n));
    flush();
  }
  if (out.ok()) {
    session.drain(emit);
    flush();
  }
  const auto &st = session.stats();
  std::fprintf(stderr, "shmbpf: %llu events, %llu lost", (unsigned long long)st.delivered,
               (unsigned long long)session.lost());
  if (st.decode_errors)
    std::fprintf(stderr, ", %llu undecodable", (unsigned long long)st.decode_errors);
  // Files created while the kernel's name map was full: their unlinks and
  // renames were not reported (Probe::track_full).
  if (uint64_t full = session.probe().track_full())
    std::fprintf(stderr, ", %llu names not followed (map full)", (unsigned long long)full);
  std::fprintf(stderr, "\n");
  if (opts.stats) {
    const std::chrono::duration<double> traced = std::chrono::steady_clock::now() - start;
    const Probe &probe = session.probe();
    std::fputs(program_stats_text(probe.program_stats(), traced.count()).c_str(), stderr);
    std::fputs(hooks_in_use_text(probe.hook_set(), probe.hooks()).c_str(), stderr);
  }
  out.check(); // a full disk is an error; a reader gone (`| head`) is not
  return 0;
}

} // namespace shmbpf
