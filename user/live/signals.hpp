// SIGINT, SIGTERM, SIGHUP and SIGQUIT end the long-running subcommands
// through their loops, so they can drain events, print summaries and
// restore the terminal. The daemon (serve) keeps running on SIGHUP.
#pragma once

namespace shmbpf {

// Installs the handlers (without SA_RESTART, so that a blocking ring-buffer
// wait returns EINTR at once) and ignores SIGPIPE: a closed pipe shows up
// as a write error instead of killing the process.
void install_stop_signals();

// The same for a daemon, which has no terminal to lose: SIGINT, SIGTERM and
// SIGQUIT stop it; SIGHUP does not, and take_hangup() reports it.
void install_daemon_signals();

// Has one of those signals arrived?
bool stop_requested();
// Which one ("SIGTERM"); "" before any.
const char *stop_signal_name();
// True once for each SIGHUP (coalesced) a daemon received since the last call.
bool take_hangup();

} // namespace shmbpf
