// `shmbpf doctor`: what this machine gives shmbpf; exit status 0 when
// shmbpf can run here, 2 when it cannot (the first line says why).
#include "cli/app.hpp"

#include "live/doctor.hpp"
#include "terminal/output.hpp"
#include "views/doctor_view.hpp"

namespace shmbpf {

int run_doctor(const DoctorCliOptions &opts) {
  const DoctorReport report = examine_machine({opts.ring_buffer_bytes, opts.hooks, opts.verbose});
  Output output;
  output.write(opts.json ? doctor_json(report) : doctor_text(report));
  output.check();
  return report.failure() ? 2 : 0;
}

} // namespace shmbpf
