#include "cli/app.hpp"
#include "cli/options.hpp"
#include "cli/version.hpp"

#include "facts/result.hpp"
#include "model/audit.hpp"
#include "model/glob.hpp"
#include "views/escape.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace shmbpf {

std::unique_ptr<CLI::App> make_app(CliOptions &opts) {
  auto app = std::make_unique<CLI::App>(
      "shmbpf: see who creates, holds and leaks shared memory (tmpfs, /dev/shm, memfd, "
      "System V), live, from the kernel.",
      "shmbpf");
  app->set_version_flag("--version", version_line());
  app->require_subcommand(1);
  // A usage error is one line, like every other error of shmbpf's.
  app->failure_message([](const CLI::App *root, const CLI::Error &e) {
    std::string cmd = "shmbpf";
    for (const CLI::App *sub : root->get_subcommands())
      cmd += " " + sub->get_name();
    // The arguments quoted in it are the user's: a newline or an escape
    // sequence in one is shown, not let through. Escaped here, once: the
    // validators above return the text as given.
    return "shmbpf: " + escape_text(e.what()) + " (see " + cmd + " --help)\n";
  });

  add_trace_command(*app, opts.trace);
  add_ls_command(*app, opts.ls);
  add_leaks_command(*app, opts.leaks);
  add_top_command(*app, opts.top);
  add_doctor_command(*app, opts.doctor);
  add_serve_command(*app, opts.serve);
  add_audit_command(*app, opts.audit);
  add_reap_command(*app, opts.reap);
  add_completion_command(*app, opts.completion);
  require_decimal(*app);
  return app;
}

int run_cli(int argc, char **argv) {
  CliOptions opts;
  auto app = make_app(opts);
  // CLI11 takes an unknown word for a stray argument and says only that a
  // subcommand is required.
  if (argc > 1 && argv[1][0] != '-') {
    const CLI::App &root = *app;
    std::string known;
    bool found = false;
    for (const CLI::App *sub : root.get_subcommands(std::function<bool(const CLI::App *)>{})) {
      known += (known.empty() ? "" : ", ") + sub->get_name();
      found = found || sub->get_name() == argv[1];
    }
    if (!found) {
      std::fprintf(stderr, "shmbpf: unknown command '%s' (commands: %s; see shmbpf --help)\n",
                   escape_text(argv[1]).c_str(), known.c_str());
      return status(Exit::refused);
    }
  }
  // One rule for a reader that goes away (`| head`) in every command: no
  // SIGPIPE death; the write fails, the output ends quietly (Output) and
  // the command exits with the status it would have had.
  std::signal(SIGPIPE, SIG_IGN);
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    // --help and --version succeed; usage errors exit 2, as most tools do.
    int code = app->exit(e);
    return status(code == 0 ? Exit::ok : Exit::refused);
  }
  // leaks, doctor, audit and reap promise 2 for every error: 1 means
  // something was found.
  const int error_status =
      status(app->got_subcommand("leaks") || app->got_subcommand("doctor") ||
                     app->got_subcommand("audit") || app->got_subcommand("reap")
                 ? Exit::refused
                 : Exit::failed);
  try {
    if (app->got_subcommand("trace"))
      return run_trace(opts.trace);
    if (app->got_subcommand("ls"))
      return run_ls(opts.ls);
    if (app->got_subcommand("leaks"))
      return run_leaks(opts.leaks);
    if (app->got_subcommand("top"))
      return run_top(opts.top);
    if (app->got_subcommand("doctor"))
      return run_doctor(opts.doctor);
    if (app->got_subcommand("serve"))
      return run_serve(opts.serve);
    if (app->got_subcommand("audit"))
      return run_audit(opts.audit);
    if (app->got_subcommand("reap"))
      return run_reap(opts.reap);
    if (app->got_subcommand("completion"))
      return run_completion(*app, opts.completion);
  } catch (const FatalError &e) {
    std::fprintf(stderr, "shmbpf: %s\n", e.what());
    return std::max(e.exit_code(), error_status);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "shmbpf: internal error: %s\n", e.what());
    return error_status;
  }
  return 0;
}

} // namespace shmbpf
