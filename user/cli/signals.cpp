#include "cli/signals.hpp"

#include <csignal>
#include <initializer_list>

namespace shmbpf {

namespace {

volatile std::sig_atomic_t g_stop = 0;

void on_stop(int) { g_stop = 1; }

} // namespace

void install_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART
  // SIGHUP: the terminal or ssh session closed; SIGQUIT: Ctrl-\. Either
  // way the command stops as on Ctrl-C: a summary, a restored terminal.
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
    sigaction(sig, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() { return g_stop != 0; }

} // namespace shmbpf
