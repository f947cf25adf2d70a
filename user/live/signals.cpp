#include "live/signals.hpp"

#include <csignal>
#include <initializer_list>

namespace shmbpf {

namespace {

volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_hangup = 0;

void on_stop(int sig) { g_stop = sig; }
void on_hangup(int) { g_hangup = 1; }

void install(void (*handler)(int), std::initializer_list<int> signals) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0; // no SA_RESTART
  for (int sig : signals)
    sigaction(sig, &sa, nullptr);
}

} // namespace

void install_stop_signals() {
  // SIGHUP: the terminal or ssh session closed; SIGQUIT: Ctrl-\. Either
  // way the command stops as on Ctrl-C: a summary, a restored terminal.
  install(on_stop, {SIGINT, SIGTERM, SIGHUP, SIGQUIT});
  std::signal(SIGPIPE, SIG_IGN);
}

void install_daemon_signals() {
  install(on_stop, {SIGINT, SIGTERM, SIGQUIT});
  // logrotate and friends send SIGHUP to have files reopened.
  install(on_hangup, {SIGHUP});
  std::signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() { return g_stop != 0; }

const char *stop_signal_name() {
  switch (g_stop) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  case SIGQUIT:
    return "SIGQUIT";
  default:
    return "";
  }
}

bool take_hangup() {
  if (!g_hangup)
    return false;
  g_hangup = 0;
  return true;
}

} // namespace shmbpf
