#!/usr/bin/env bash
# Installs what shmbpf needs on Debian 12 (as root): to build and run it,
# and with --tests also what its tests use (scripts/test.sh passes it).
#   bash scripts/deps.sh [--tests]
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
tests=false
case "${1:-}" in
"") ;;
--tests) tests=true ;;
*)
  echo "usage: $0 [--tests]" >&2
  exit 2
  ;;
esac
pkgs=(
  build-essential cmake pkg-config git     # toolchain
  clang llvm libbpf-dev bpftool            # BPF compiler, libbpf, skeleton generator
  libelf-dev zlib1g-dev                    # libbpf's own link dependencies
  libcli11-dev                             # command line parsing
  libjemalloc-dev                          # allocator with huge pages (user/alloc)
  libncurses-dev                           # shmbpf top's terminal UI
  libmicrohttpd-dev                        # shmbpf serve's HTTP server (/metrics, /healthz, /v1/)
  libcpp-httplib-dev                       # the clients of serve's unix socket (ls, leaks, reap)
  libyaml-cpp-dev                          # serve --web-config-file's YAML
  libgnutls28-dev libcrypt-dev             # its TLS files and client certificates; bcrypt (crypt(3))
)
test_pkgs=(
  libgtest-dev nlohmann-json3-dev          # tests (JSON only to parse our NDJSON in tests)
  clang-format                             # style check
  libclang-rt-dev                          # clang's sanitizer runtimes and libFuzzer
  prometheus                               # promtool: what /metrics serves, deploy/'s rules
  systemd                                  # systemd-analyze verify: deploy/'s unit
  python3-yaml                             # deploy/'s Kubernetes manifest, parsed
  man-db groff-base                        # the man pages, rendered without a warning
  dpkg-dev                                 # the .deb: cpack's dpkg-shlibdeps, dpkg-deb
  lintian                                  # the .deb, checked as Debian checks packages
  systemd-container                        # tests/deploy/systemd_boot.sh: systemd-nspawn boots the unit
  tmux                                     # drives shmbpf top in a real terminal
  zsh fish                                 # shmbpf completion's scripts, in their shells
  python3-torch                            # the PyTorch workloads shmbpf exists for
  qemu-system-x86 busybox-static cpio      # tests/vm: Debian's kernels in guests, their initramfs
  docker.io                                # tests/e2e: a real dockerd names its containers
  podman                                   # tests/e2e: a real podman container, found from its conmon
  xz-utils zstd                            # tests/vm: unpacking those kernels
  mmdebstrap                               # tests/deploy/image.sh: the image's Debian 12 root
  bindfs                                   # tests/e2e: a FUSE mount whose daemon is stopped, a hung disk
  openssl curl                             # tests/e2e: serve's TLS (a CA and certificates), its https client
)
# The arm64 build (cmake/aarch64.cmake) and its guests: Debian's cross
# compilers and the arm64 builds of the libraries, beside the host's
# (multiarch). jemalloc's and yaml-cpp's -dev packages are not Multi-Arch:
# the build goes without jemalloc there and takes yaml-cpp's library alone
# (its headers are the host's).
arm64_pkgs=(
  g++-aarch64-linux-gnu qemu-user qemu-system-arm
  libbpf-dev:arm64 libelf-dev:arm64 zlib1g-dev:arm64 libncurses-dev:arm64
  libmicrohttpd-dev:arm64 libcpp-httplib-dev:arm64 libgnutls28-dev:arm64
  libcrypt-dev:arm64 libyaml-cpp0.7:arm64 libgtest-dev:arm64
)
if $tests; then
  pkgs+=("${test_pkgs[@]}" "${arm64_pkgs[@]}")
  dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
fi
# kubectl kustomize renders deploy/kubernetes: Debian's kubernetes-client,
# unless a kubectl is there already (another package's /usr/bin/kubectl,
# which kubernetes-client's would collide with: dpkg refuses to overwrite it).
if $tests && ! command -v kubectl >/dev/null; then
  pkgs+=(kubernetes-client)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || exit 0

# The prometheus package starts its server and enables it at boot; the tests
# want only its tools (and start a server of their own when they need one).
# While installing, a policy of ours tells the package scripts to start no
# service (unless the machine has a policy of its own); a server this
# installed is then disabled.
policy=/usr/sbin/policy-rc.d
ours=false
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  ours=true
fi
trap '$ours && rm -f "$policy"' EXIT
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null; then
  systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
