// SIGINT, SIGTERM, SIGHUP and SIGQUIT end the long-running subcommands
// through their loops, so they can drain events, print summaries and
// restore the terminal.
#pragma once

namespace shmbpf {

// Installs the handlers (without SA_RESTART, so that a blocking ring-buffer
// wait returns EINTR at once) and ignores SIGPIPE: a closed pipe shows up
// as a write error instead of killing the process.
void install_stop_signals();

// Has one of those signals arrived?
bool stop_requested();

} // namespace shmbpf
