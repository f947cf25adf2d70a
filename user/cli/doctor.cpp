// `shmbpf doctor`: what this machine gives shmbpf; exit status 0 when
// shmbpf can run here, 2 when it cannot (the first line says why).
#include "cli/app.hpp"
#include "cli/options.hpp"

#include "live/doctor.hpp"
#include "terminal/output.hpp"
#include "views/doctor_view.hpp"

namespace shmbpf {

void add_doctor_command(CLI::App &app, DoctorCliOptions &d) {
  auto *doctor = app.add_subcommand(
      "doctor", "Check what this machine gives shmbpf: kernel, BTF, privileges, tracefs, which "
                "program serves each hook (the real ones are loaded and attached, then let go), "
                "the fallbacks, the tmpfs and cgroup2 mounts. Exit status 0: shmbpf can run "
                "here, 2: it cannot (the first line says why).");
  doctor->add_flag("--json", d.json, "Print JSON");
  add_ring_buffer_option(doctor, d.ring_buffer_bytes);
  add_hooks_option(doctor, d.hooks, "full");
  add_verbose_flag(doctor, d.verbose);
}

int run_doctor(const DoctorCliOptions &opts) {
  const DoctorReport report = examine_machine({opts.ring_buffer_bytes, opts.hooks, opts.verbose});
  Output output;
  output.write(opts.json ? doctor_json(report) : doctor_text(report));
  output.check();
  return report.failure() ? 2 : 0;
}

} // namespace shmbpf
