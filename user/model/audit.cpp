#include "model/audit.hpp"

#include "model/audit_context.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace shmbpf {

namespace {

constexpr std::string_view kHostIpc = "host-ipc-namespace";
constexpr std::string_view kSharedIpc = "shared-ipc-namespace";
constexpr std::string_view kHostShm = "host-shm-mounted";
constexpr std::string_view kCrossSegment = "cross-container-segment";
constexpr std::string_view kUnbounded = "unbounded-shm-mount";
constexpr std::string_view kMountOptions = "shm-mount-options";
constexpr std::string_view kExecFromShm = "exec-from-shm";
constexpr std::string_view kFileless = "fileless-exec";
constexpr std::string_view kWorldWritable = "world-writable-segment";

const RuleInfo &rule_info(std::string_view id) {
  for (const RuleInfo &r : audit_rules())
    if (r.id == id)
      return r;
  return audit_rules().front(); // not reached: every rule is listed
}

size_t rule_rank(std::string_view id) {
  const auto &rules = audit_rules();
  for (size_t i = 0; i < rules.size(); ++i)
    if (rules[i].id == id)
      return i;
  return rules.size();
}

Finding make_finding(std::string_view rule, std::optional<ContainerRef> container) {
  Finding f;
  f.rule = std::string(rule);
  f.severity = rule_info(rule).severity;
  f.container = std::move(container);
  return f;
}

// How a summary names a container: the runtime's name, else a short id.
std::string display_name(const ContainerRef &c) {
  if (!c.name.empty())
    return c.name;
  return c.id.substr(0, 12);
}

std::string names_of(const std::vector<ContainerRef> &cs) {
  std::string out;
  for (const ContainerRef &c : cs) {
    if (!out.empty())
      out += ", ";
    out += display_name(c);
  }
  return out;
}

void add_capped(std::vector<std::string> &v, const std::string &s) {
  if (v.size() < kEvidenceItems)
    v.push_back(s);
}

} // namespace

namespace {

AuditProcess audit_process(const AuditContext::Proc &p) {
  return AuditProcess{p.proc->id.pid, p.proc->id.comm, p.container};
}

void add_process(Evidence &e, const AuditContext::Proc &p) {
  if (e.processes.size() < kEvidenceItems)
    e.processes.push_back(audit_process(p));
}

// Two containers of one pod share their IPC namespace by design.
bool same_pod(const ContainerRef &a, const ContainerRef &b) {
  return !a.pod_uid.empty() && a.pod_uid == b.pod_uid;
}

void host_ipc(const AuditContext &ctx, std::vector<Finding> &out) {
  const uint32_t host_ipc = ctx.scan().host.ipcns;
  if (host_ipc == 0)
    return;
  std::map<std::string, Finding> by_container;
  for (const AuditContext::Proc &p : ctx.procs()) {
    if (!p.container || p.proc->id.ipcns != host_ipc)
      continue;
    auto [it, fresh] = by_container.try_emplace(p.container->id);
    Finding &f = it->second;
    if (fresh) {
      f = make_finding(kHostIpc, p.container);
      f.evidence.ipcns = host_ipc;
    }
    add_process(f.evidence, p);
  }
  for (auto &[id, f] : by_container) {
    f.summary = "its processes share the host's IPC namespace: the host's System V segments are "
                "theirs to attach, and theirs the host's";
    out.push_back(std::move(f));
  }
}

void shared_ipc(const AuditContext &ctx, std::vector<Finding> &out) {
  const uint32_t host_ipc = ctx.scan().host.ipcns;
  std::map<uint32_t, std::map<std::string, std::vector<const AuditContext::Proc *>>> by_ns;
  for (const AuditContext::Proc &p : ctx.procs())
    if (p.container && p.proc->id.ipcns != 0 && p.proc->id.ipcns != host_ipc)
      by_ns[p.proc->id.ipcns][p.container->id].push_back(&p);
  for (const auto &[ns, members] : by_ns) {
    if (members.size() < 2)
      continue;
    for (const auto &[id, procs] : members) {
      const ContainerRef &self = *procs.front()->container;
      Finding f = make_finding(kSharedIpc, self);
      f.evidence.ipcns = ns;
      for (const auto &[other_id, other_procs] : members) {
        const ContainerRef &other = *other_procs.front()->container;
        if (other_id == id || same_pod(self, other))
          continue;
        f.evidence.others.push_back(other);
        for (const AuditContext::Proc *p : other_procs)
          add_process(f.evidence, *p);
      }
      if (f.evidence.others.empty())
        continue;
      for (const AuditContext::Proc *p : procs)
        add_process(f.evidence, *p);
      f.summary = "shares its IPC namespace with " + names_of(f.evidence.others) +
                  ": System V segments and /dev/shm are common to them";
      out.push_back(std::move(f));
    }
  }
}

// Each container's view of its mount namespaces' tables.
template <typename Fn> void for_each_container_mount(const AuditContext &ctx, Fn &&fn) {
  std::set<std::pair<std::string, uint32_t>> seen; // (container, mntns)
  for (const AuditContext::Proc &p : ctx.procs()) {
    if (!p.container || ctx.hosts_mntns(p.proc->id.mntns))
      continue;
    if (!seen.emplace(p.container->id, p.proc->id.mntns).second)
      continue;
    const MountNamespace *ns = ctx.mount_namespace(p.proc->id.mntns);
    if (!ns)
      continue;
    for (const MountInfo &m : ns->mounts)
      if (!is_overmounted(ns->mounts, m))
        fn(p, *ns, m);
  }
}

void host_shm_mounted(const AuditContext &ctx, std::vector<Finding> &out) {
  if (!ctx.host_shm_dev())
    return;
  const uint32_t dev = *ctx.host_shm_dev();
  for_each_container_mount(
      ctx, [&](const AuditContext::Proc &p, const MountNamespace &ns, const MountInfo &m) {
        if (m.dev != dev)
          return;
        Finding f = make_finding(kHostShm, p.container);
        f.evidence.mountpoint = m.mountpoint;
        f.evidence.mount_options = m.mount_options;
        f.evidence.dev = dev;
        f.evidence.mntns = ns.mntns;
        add_process(f.evidence, p);
        f.summary = "the host's /dev/shm is mounted at " + m.mountpoint +
                    ": the container reads, writes and fills the host's shared memory";
        out.push_back(std::move(f));
      });
}

void unbounded_shm(const AuditContext &ctx, std::vector<Finding> &out) {
  for_each_container_mount(
      ctx, [&](const AuditContext::Proc &p, const MountNamespace &ns, const MountInfo &m) {
        if (m.fstype != "tmpfs" || !ctx.is_shm_mount(m) || m.dev == ctx.host_shm_dev())
          return;
        const std::optional<uint64_t> size = m.size_limit();
        const std::optional<MemoryLimit> limit = ctx.memory_limit(p.container->id);
        const std::optional<uint64_t> memory = limit ? limit->bytes : std::nullopt;
        std::string why;
        if (!size || *size == 0)
          why = "has no size limit of its own (a tmpfs's default is half of the host's memory)";
        else if (memory && *size > *memory)
          why = "may grow larger than the container's memory limit";
        else
          return;
        Finding f = make_finding(kUnbounded, p.container);
        f.evidence.mountpoint = m.mountpoint;
        f.evidence.dev = m.dev;
        f.evidence.mntns = ns.mntns;
        f.evidence.size_limit = size && *size != 0 ? size : std::nullopt;
        f.evidence.memory_limit = memory;
        add_process(f.evidence, p);
        f.summary = m.mountpoint + " " + why;
        out.push_back(std::move(f));
      });
}

bool has_option(std::string_view options, std::string_view want) {
  while (!options.empty()) {
    const size_t comma = options.find(',');
    if (options.substr(0, comma) == want)
      return true;
    options = comma == std::string_view::npos ? std::string_view{} : options.substr(comma + 1);
  }
  return false;
}

void mount_options(const AuditContext &ctx, std::vector<Finding> &out) {
  // One finding per owner and mount: the host's /dev/shm shows in the
  // namespace of every service with a private /tmp.
  std::set<std::tuple<std::string, uint32_t, std::string>> seen;
  for (const MountNamespace &ns : ctx.scan().system.namespaces) {
    const std::vector<ContainerRef> owners = ctx.owners_of_mntns(ns.mntns);
    if (owners.empty() && !ctx.hosts_mntns(ns.mntns))
      continue; // no process of this namespace was scanned
    for (const MountInfo &m : ns.mounts) {
      if (m.fstype != "tmpfs" || !is_shm_mountpoint(m.mountpoint) || is_overmounted(ns.mounts, m))
        continue;
      std::vector<std::string> missing;
      for (std::string_view o : {"nodev", "nosuid", "noexec"})
        if (!has_option(m.mount_options, o))
          missing.emplace_back(o);
      if (missing.empty())
        continue;
      std::vector<std::optional<ContainerRef>> subjects;
      if (owners.empty())
        subjects.emplace_back(std::nullopt);
      for (const ContainerRef &c : owners)
        subjects.emplace_back(c);
      for (const std::optional<ContainerRef> &c : subjects) {
        if (!seen.emplace(c ? c->id : "", m.dev, m.mountpoint).second)
          continue;
        Finding f = make_finding(kMountOptions, c);
        f.evidence.mountpoint = m.mountpoint;
        f.evidence.mount_options = m.mount_options;
        f.evidence.dev = m.dev;
        f.evidence.mntns = ns.mntns;
        std::string list;
        for (const std::string &o : missing)
          list += (list.empty() ? "" : ", ") + o;
        f.summary = m.mountpoint + " is mounted without " + list;
        out.push_back(std::move(f));
      }
    }
  }
}

using SegmentKey = std::tuple<int, uint64_t, uint64_t>; // kind, dev or ipcns, ino or shmid

void cross_container(const AuditContext &ctx, std::vector<Finding> &out) {
  struct Holders {
    std::string path;
    std::vector<const AuditContext::Proc *> procs;
  };
  std::map<SegmentKey, Holders> segments;
  for (const AuditContext::Proc &p : ctx.procs()) {
    for (const HeldFile &h : p.proc->holdings) {
      const SegmentKey key = h.kind == HeldKind::sysv
                                 ? SegmentKey{2, p.proc->id.ipcns, h.ino}
                                 : SegmentKey{h.kind == HeldKind::memfd ? 1 : 0, h.dev, h.ino};
      Holders &s = segments[key];
      if (s.path.empty())
        s.path = h.path;
      s.procs.push_back(&p);
    }
  }
  std::map<std::string, Finding> by_container;
  std::set<std::string> with_host; // containers sharing something with the host
  for (const auto &[key, s] : segments) {
    // The parties: the host, containers, a pod's containers as one.
    std::map<std::string, const AuditContext::Proc *> parties;
    for (const AuditContext::Proc *p : s.procs) {
      const std::string party =
          !p->container
              ? std::string()
              : (p->container->pod_uid.empty() ? p->container->id : "pod:" + p->container->pod_uid);
      parties.try_emplace(party, p);
    }
    if (parties.size() < 2)
      continue;
    for (const auto &[party, first] : parties) {
      if (!first->container)
        continue;
      auto [it, fresh] = by_container.try_emplace(first->container->id);
      Finding &f = it->second;
      if (fresh)
        f = make_finding(kCrossSegment, first->container);
      ++f.evidence.segments;
      if (f.evidence.segments == 1 && std::get<0>(key) != 2) {
        f.evidence.dev = static_cast<uint32_t>(std::get<1>(key)); // the first file's
        f.evidence.ino = std::get<2>(key);
      }
      if (std::get<0>(key) == 2) {
        if (f.evidence.shmids.size() < kEvidenceItems)
          f.evidence.shmids.push_back(static_cast<int32_t>(std::get<2>(key)));
      } else {
        add_capped(f.evidence.paths, s.path);
      }
      for (const auto &[other_party, other] : parties) {
        if (other_party == party)
          continue;
        if (other->container) {
          if (std::find(f.evidence.others.begin(), f.evidence.others.end(), *other->container) ==
              f.evidence.others.end())
            f.evidence.others.push_back(*other->container);
        }
      }
      for (const AuditContext::Proc *p : s.procs) {
        AuditProcess ap = audit_process(*p);
        if (f.evidence.processes.size() < kEvidenceItems &&
            std::find(f.evidence.processes.begin(), f.evidence.processes.end(), ap) ==
                f.evidence.processes.end())
          f.evidence.processes.push_back(std::move(ap));
      }
      if (parties.contains(std::string()))
        with_host.insert(first->container->id);
    }
  }
  for (auto &[id, f] : by_container) {
    std::string with = names_of(f.evidence.others);
    if (with_host.contains(id))
      with = with.empty() ? "the host" : "the host and " + with;
    f.summary = std::to_string(f.evidence.segments) +
                (f.evidence.segments == 1 ? " segment is" : " segments are") +
                " held by its processes and by " + with;
    out.push_back(std::move(f));
  }
}

// Who a superblock's files belong to: the host when a host namespace mounts
// it, else the containers whose namespaces do.
std::vector<std::optional<ContainerRef>> owners_of_dev(const AuditContext &ctx, uint32_t dev) {
  std::vector<std::optional<ContainerRef>> out;
  std::set<std::string> seen;
  bool host = false;
  for (const MountNamespace &ns : ctx.scan().system.namespaces) {
    bool mounts = false;
    for (const MountInfo &m : ns.mounts)
      mounts = mounts || m.dev == dev;
    if (!mounts)
      continue;
    const std::vector<ContainerRef> owners = ctx.owners_of_mntns(ns.mntns);
    if (owners.empty() && ctx.hosts_mntns(ns.mntns))
      host = true;
    for (const ContainerRef &c : owners)
      if (seen.insert(c.id).second)
        out.emplace_back(c);
  }
  if (host)
    out.insert(out.begin(), std::nullopt);
  return out;
}

void world_writable(const AuditContext &ctx, std::vector<Finding> &out) {
  for (const ScannedFs &fs : ctx.scan().system.filesystems) {
    if (!ctx.shm_mount_of_dev(fs.dev))
      continue; // /run, /tmp: not shared memory
    Finding f;
    for (const TmpfsFile &file : fs.files) {
      if ((file.mode & 0002) == 0)
        continue;
      if (f.rule.empty()) {
        std::vector<std::optional<ContainerRef>> owners = owners_of_dev(ctx, fs.dev);
        f = make_finding(kWorldWritable, owners.empty() ? std::nullopt : owners.front());
        for (size_t i = 1; i < owners.size(); ++i)
          if (owners[i])
            f.evidence.others.push_back(*owners[i]);
        f.evidence.mountpoint = fs.mountpoint;
        f.evidence.dev = fs.dev;
      }
      ++f.evidence.segments;
      add_capped(f.evidence.paths, file.path);
      if (f.evidence.segments == 1) {
        f.evidence.ino = file.ino;
        f.evidence.mode = file.mode;
      }
    }
    if (f.rule.empty())
      continue;
    f.summary = std::to_string(f.evidence.segments) +
                (f.evidence.segments == 1 ? " file" : " files") + " on " + fs.mountpoint +
                " can be written by every user";
    out.push_back(std::move(f));
  }
  const uint32_t host_ipc = ctx.scan().host.ipcns;
  for (const ScannedIpc &ipc : ctx.scan().system.ipc) {
    Finding f;
    for (const SysvEntry &e : ipc.segments) {
      if ((e.mode & 0002) == 0)
        continue;
      if (f.rule.empty()) {
        std::optional<ContainerRef> owner;
        std::vector<ContainerRef> others;
        if (ipc.ipcns != host_ipc) {
          std::set<std::string> seen;
          for (const AuditContext::Proc &p : ctx.procs()) {
            if (!p.container || p.proc->id.ipcns != ipc.ipcns ||
                !seen.insert(p.container->id).second)
              continue;
            if (owner)
              others.push_back(*p.container);
            else
              owner = p.container;
          }
        }
        f = make_finding(kWorldWritable, owner);
        f.evidence.others = std::move(others);
        f.evidence.ipcns = ipc.ipcns;
      }
      ++f.evidence.segments;
      if (f.evidence.shmids.size() < kEvidenceItems)
        f.evidence.shmids.push_back(e.shmid);
      if (f.evidence.segments == 1)
        f.evidence.mode = e.mode;
    }
    if (f.rule.empty())
      continue;
    f.summary = std::to_string(f.evidence.segments) + " System V " +
                (f.evidence.segments == 1 ? "segment" : "segments") +
                " can be attached and written by every user";
    out.push_back(std::move(f));
  }
}

// exec-from-shm or fileless-exec for one program, or nullopt.
std::optional<Finding> judge_exe(const AuditContext &ctx, const ExeFile &exe,
                                 const std::optional<ContainerRef> &container) {
  if (exe.path.starts_with("/memfd:")) {
    Finding f = make_finding(kFileless, container);
    f.evidence.paths.push_back(exe.path);
    f.evidence.dev = exe.dev;
    f.evidence.ino = exe.ino;
    f.summary =
        "runs a program from a memfd (" + exe.path.substr(1) + "), which no file on disk holds";
    return f;
  }
  if (!exe.on_shm)
    return std::nullopt;
  const std::string *mp = ctx.shm_mount_of_dev(exe.dev);
  if (!mp)
    return std::nullopt;
  Finding f = make_finding(kExecFromShm, container);
  f.evidence.paths.push_back(exe.path);
  f.evidence.mountpoint = *mp;
  f.evidence.dev = exe.dev;
  f.evidence.ino = exe.ino;
  f.summary =
      "runs " + exe.path + (exe.deleted ? " (deleted)" : "") + ", a program stored on " + *mp;
  return f;
}

void execs(const AuditContext &ctx, std::vector<Finding> &out) {
  std::map<std::tuple<std::string, uint32_t, uint64_t>, Finding> by_program;
  for (const AuditContext::Proc &p : ctx.procs()) {
    const ExeFile *exe = ctx.exe(p.proc->id.pid);
    if (!exe)
      continue;
    std::optional<Finding> f = judge_exe(ctx, *exe, p.container);
    if (!f)
      continue;
    auto [it, fresh] =
        by_program.try_emplace({p.container ? p.container->id : "", exe->dev, exe->ino}, *f);
    if (fresh)
      it->second.evidence.mntns = p.proc->id.mntns; // where the path is seen
    add_process(it->second.evidence, p);
  }
  for (auto &[key, f] : by_program)
    out.push_back(std::move(f));
}

std::string container_key(const std::optional<ContainerRef> &c) {
  return c ? c->id : std::string();
}

} // namespace

std::string_view severity_name(Severity s) {
  switch (s) {
  case Severity::low:
    return "low";
  case Severity::medium:
    return "medium";
  case Severity::high:
    return "high";
  }
  return "unknown";
}

std::optional<Severity> parse_severity(std::string_view s) {
  for (Severity v : {Severity::low, Severity::medium, Severity::high})
    if (severity_name(v) == s)
      return v;
  return std::nullopt;
}

const std::vector<RuleInfo> &audit_rules() {
  static const std::vector<RuleInfo> rules = {
      {kHostIpc, Severity::high, "container shares the host's IPC namespace"},
      {kHostShm, Severity::high, "host's /dev/shm mounted in a container"},
      {kExecFromShm, Severity::high, "program run from a shared-memory mount"},
      {kFileless, Severity::high, "program run from a memfd"},
      {kSharedIpc, Severity::medium, "containers share an IPC namespace"},
      {kCrossSegment, Severity::medium, "segment shared across containers"},
      {kUnbounded, Severity::medium, "shared-memory mount without a bound"},
      {kWorldWritable, Severity::medium, "segment writable by every user"},
      {kMountOptions, Severity::low, "/dev/shm without nodev, nosuid or noexec"},
  };
  return rules;
}

std::vector<Finding> audit_snapshot(const AuditScan &scan) {
  const AuditContext ctx(scan);
  std::vector<Finding> out;
  host_ipc(ctx, out);
  shared_ipc(ctx, out);
  host_shm_mounted(ctx, out);
  cross_container(ctx, out);
  unbounded_shm(ctx, out);
  mount_options(ctx, out);
  execs(ctx, out);
  world_writable(ctx, out);
  for (Finding &f : out)
    std::sort(f.evidence.processes.begin(), f.evidence.processes.end(),
              [](const AuditProcess &a, const AuditProcess &b) { return a.pid < b.pid; });
  std::stable_sort(out.begin(), out.end(), [](const Finding &a, const Finding &b) {
    return std::tuple(-static_cast<int>(a.severity), rule_rank(a.rule),
                      container_key(a.container)) <
           std::tuple(-static_cast<int>(b.severity), rule_rank(b.rule), container_key(b.container));
  });
  return out;
}

ExecJudge::ExecJudge(const AuditScan &scan) : ctx_(std::make_unique<AuditContext>(scan)) {}
ExecJudge::~ExecJudge() = default;

ExeFile ExecJudge::exe_of(const Event &exec, const std::optional<ExeFile> &live) const {
  ExeFile exe;
  exe.pid = exec.pid;
  exe.dev = exec.dev;
  exe.ino = exec.ino;
  exe.on_shm = exec.fs != 0;
  if (exe.on_shm && exec.name.starts_with("memfd:") && !ctx_->is_mounted(exec.dev)) {
    exe.path = "/" + exec.name;
    exe.deleted = true;
  } else if (live && live->dev == exec.dev && live->ino == exec.ino) {
    exe.path = live->path;
    exe.deleted = live->deleted;
  } else {
    exe.path = exec.filename;
  }
  return exe;
}

bool ExecJudge::knows_mount(uint32_t mntns, uint32_t dev) const {
  return ctx_->is_mounted_in(mntns, dev);
}

void ExecJudge::learn_mounts(const std::vector<MountNamespace> &namespaces) {
  ctx_->learn_mounts(namespaces);
}

std::optional<Finding> ExecJudge::judge(const ExecSeen &exec) const {
  std::optional<Finding> f = judge_exe(*ctx_, exec.exe, exec.process.container);
  if (f) {
    f->evidence.processes.push_back(exec.process);
    f->watched = true;
  }
  return f;
}

bool finding_is_about(const Finding &f, std::string_view selector) {
  if (selector == "host")
    return !f.container;
  if (!f.container)
    return false;
  const ContainerRef &c = *f.container;
  return c.id == selector || (selector.size() >= 4 && c.id.starts_with(selector)) ||
         (!c.name.empty() && c.name == selector);
}

bool AuditSelection::selects(const Finding &f) const {
  if (!rules.empty() && std::find(rules.begin(), rules.end(), f.rule) == rules.end())
    return false;
  return !container || finding_is_about(f, *container);
}

std::vector<Finding> AuditSelection::of(std::vector<Finding> findings) const {
  std::erase_if(findings, [&](const Finding &f) { return !selects(f); });
  return findings;
}

} // namespace shmbpf
