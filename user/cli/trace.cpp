// `shmbpf trace`: one line (or JSON object) per event, until a signal or
// --duration.
#include "cli/app.hpp"
#include "cli/signals.hpp"

#include "decode/result.hpp"
#include "probe/session.hpp"
#include "views/trace_view.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <string>

namespace shmbpf {

int run_trace(const TraceOptions &opts) {
  ProbeOptions popts;
  popts.ring_buffer_bytes = opts.ring_buffer_bytes;
  popts.verbose = opts.verbose;
  Session session(popts);
  install_stop_signals();
  for (const auto &m : session.probe().missing_hooks())
    std::fprintf(stderr, "shmbpf: warning: hook not available: %s\n", m.c_str());

  TraceClock clock = TraceClock::now();
  bool out_ok = true;
  std::string line;
  auto emit = [&](Event &e) {
    if (!out_ok || !opts.matches(e))
      return;
    line = opts.json ? trace_json(e, clock) : trace_line(e, clock);
    line += '\n';
    if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size())
      out_ok = false;
  };

  if (!opts.json) {
    std::string h = trace_header() + "\n";
    std::fwrite(h.data(), 1, h.size(), stdout);
  }
  std::fflush(stdout);

  auto start = std::chrono::steady_clock::now();
  while (!stop_requested() && out_ok) {
    if (opts.duration_s > 0 &&
        std::chrono::steady_clock::now() - start >= std::chrono::duration<double>(opts.duration_s))
      break;
    int n = session.poll(100, emit);
    if (n < 0 && n != -EINTR)
      throw FatalError("reading the ring buffer", std::to_string(-n));
    if (std::fflush(stdout) != 0)
      out_ok = false;
  }
  if (out_ok) {
    session.drain(emit);
    std::fflush(stdout);
  }
  const auto &st = session.stats();
  std::fprintf(stderr, "shmbpf: %llu events, %llu lost", (unsigned long long)st.delivered,
               (unsigned long long)session.lost());
  if (st.decode_errors)
    std::fprintf(stderr, ", %llu undecodable", (unsigned long long)st.decode_errors);
  std::fprintf(stderr, "\n");
  return 0;
}

} // namespace shmbpf
