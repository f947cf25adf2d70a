#!/bin/sh
# What the containerd guest runs: the e2e tests of a kubelet-shaped pod
# with a real containerd (tests/e2e/containerd.hpp: both cgroup drivers'
# layouts, a restarted container) on a host of cgroup v2 only, with serve's
# default hooks (the light set, on shmem's calls on this kernel). The
# guest's busybox system lacks what ctr run --net-host binds into the
# container (/etc/hosts, /etc/resolv.conf) and has its loopback down.
# POSIX sh: the guest has busybox only.
#
#   containerd_check.sh BUILD_DIR
build=$1
export PATH=/usr/bin:/usr/sbin:/bin:/sbin:$PATH
ip link set lo up || exit 1
mkdir -p /etc && touch /etc/hosts /etc/resolv.conf || exit 1
exec "$build/tests/shmbpf_e2e_tests" --gtest_filter='ContainerdPod.*'
