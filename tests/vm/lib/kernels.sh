# shellcheck shell=bash
# Debian kernels for the VM layer, fetched with apt-get from Debian's archive
# and cached. Sourced by tests/vm/vm.sh.
#
# Every release gets an apt state of its own under the cache (sources.list,
# lists, archives, an empty dpkg status): the machine's /etc/apt and
# /var/lib/apt are never read for sources nor written. VM_ARCH (amd64 or
# arm64, set by vm.sh) picks the architecture; arm64's states and kernels
# sit beside amd64's, as RELEASE-arm64, so that one never disturbs the other.

# RELEASE -> its name in the cache and in messages: trixie, trixie-arm64.
vm_tag() { # RELEASE
  if [ "$VM_ARCH" = amd64 ]; then echo "$1"; else echo "$1-$VM_ARCH"; fi
}

# Codename -> the suites where its kernels are published: point releases
# land in the release itself, fixes in between in -security.
vm_suites() {
  case "$1" in
  bullseye | bookworm | trixie) echo "$1 $1-updates" ;;
  *) return 1 ;;
  esac
}

vm_apt() { # RELEASE apt-get|apt-cache ARGS...
  local state tool=$2
  state="$VM_CACHE/apt/$(vm_tag "$1")"
  shift 2
  "$tool" -q \
    -o Dir::Etc::sourcelist="$state/sources.list" \
    -o Dir::Etc::sourceparts="$state/sources.list.d" \
    -o Dir::Etc::preferences="$state/preferences" \
    -o Dir::Etc::preferencesparts="$state/preferences.d" \
    -o Dir::State="$state" \
    -o Dir::State::lists="$state/lists" \
    -o Dir::State::status="$state/status" \
    -o Dir::Cache="$state/cache" \
    -o Dir::Cache::archives="$state/cache/archives" \
    -o Dir::Cache::pkgcache="" -o Dir::Cache::srcpkgcache="" \
    -o APT::Architecture="$VM_ARCH" -o APT::Architectures::="$VM_ARCH" \
    -o APT::Sandbox::User=root \
    -o Acquire::Languages=none \
    "$@"
}

vm_apt_state() { # RELEASE: lay out the private apt state once
  local rel=$1 state suite
  state="$VM_CACHE/apt/$(vm_tag "$1")"
  [ -f "$state/sources.list" ] && return 0
  mkdir -p "$state"/{lists/partial,cache/archives/partial,sources.list.d,preferences.d}
  : >"$state/status"
  : >"$state/preferences"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  {
    for suite in $(vm_suites "$rel"); do
      echo "deb [signed-by=$keyring] http://deb.debian.org/debian $suite main"
    done
    echo "deb [signed-by=$keyring] http://deb.debian.org/debian-security $rel-security main"
  } >"$state/sources.list.tmp"
  mv "$state/sources.list.tmp" "$state/sources.list"
}

# The release's own kernel: the unsigned build of the image its
# linux-image-ARCH depends on (the candidate is the newest of the release
# and its updates). Not simply the newest linux-image-*-unsigned: bookworm
# also carries a 6.12 series (6.12.x+deb12) beside its 6.1. On arm64 the
# meta package names the 4k-page flavour (-arm64, not -arm64-16k).
vm_release_kernel_pkg() { # RELEASE
  local image
  image=$(vm_apt "$1" apt-cache show --no-all-versions "linux-image-$VM_ARCH" 2>/dev/null |
    sed -n "s/^Depends: \(linux-image-[^ ,]*-$VM_ARCH\)\b.*/\1/p" | head -n 1)
  [ -z "$image" ] || echo "$image-unsigned"
}

# Sets VM_KERNEL (what QEMU boots), VM_KERNEL_PKG and VM_KERNEL_VERSION
# for RELEASE. The lists are updated, and the release's kernel fetched if
# it changed, when they are older than SHMBPF_VM_REFRESH_DAYS (7) or
# nothing is cached. Only /boot is kept from the package: Debian builds in
# every driver the guest uses (serial console, tmpfs, initramfs), so no
# module is needed. An archive out of reach leaves the cached kernel in use.
vm_kernel() {
  local rel=$1 tag dir
  vm_suites "$rel" >/dev/null || vm_die "unknown release '$rel' (bullseye, bookworm or trixie)"
  tag=$(vm_tag "$rel")
  dir="$VM_CACHE/kernels/$tag"
  mkdir -p "$dir"
  exec 8>"$dir/.lock"
  flock 8
  vm_apt_state "$rel"
  local stamp="$VM_CACHE/apt/$tag/updated" days=${SHMBPF_VM_REFRESH_DAYS:-7}
  if [ ! -f "$dir/package" ] || [ -z "$(find "$stamp" -mtime -"$days" 2>/dev/null)" ]; then
    local t0=$SECONDS
    if vm_apt "$rel" apt-get update >"$dir/update.log" 2>&1; then
      touch "$stamp"
      vm_log "$tag: package lists updated in $((SECONDS - t0)) s"
    elif [ -f "$dir/package" ]; then
      vm_log "$tag: apt-get update failed, using the cached kernel ($(tail -n 1 "$dir/update.log"))"
    else
      cat "$dir/update.log" >&2
      exec 8>&-
      vm_cannot "$tag: apt-get update failed and no kernel is cached"
      return 1
    fi
    local pkg ver
    pkg=$(vm_release_kernel_pkg "$rel")
    [ -n "$pkg" ] || vm_die "$tag: the package lists name no kernel for linux-image-$VM_ARCH"
    ver=$(vm_apt "$rel" apt-cache show --no-all-versions "$pkg" | sed -n 's/^Version: //p' | head -n 1)
    if [ "$(cat "$dir/package" 2>/dev/null)" != "$pkg $ver" ]; then
      vm_fetch_kernel "$rel" "$dir" "$pkg" "$ver" || {
        exec 8>&-
        return 1
      }
    fi
  fi
  vm_boot_image "$dir"
  exec 8>&-
  read -r VM_KERNEL_PKG VM_KERNEL_VERSION <"$dir/package"
}

# Downloads PACKAGE (NAME or NAME=VERSION) of RELEASE into a new directory
# under DIR, whose path goes to VM_FETCHED; when apt-get fails, shows its
# output, removes the directory and returns 1.
vm_download() { # RELEASE DIR PACKAGE
  VM_FETCHED=$(mktemp -d "$2/fetch.XXXXXX")
  (cd "$VM_FETCHED" && vm_apt "$1" apt-get download "$3") >"$2/download.log" 2>&1 && return 0
  cat "$2/download.log" >&2
  rm -rf "$VM_FETCHED"
  return 1
}

vm_fetch_kernel() { # RELEASE DIR PACKAGE VERSION
  local rel=$1 dir=$2 pkg=$3 ver=$4 t0=$SECONDS tmp tag
  tag=$(vm_tag "$rel")
  if ! vm_download "$rel" "$dir" "$pkg=$ver"; then
    if [ -f "$dir/package" ]; then
      vm_log "$tag: downloading $pkg $ver failed, using the cached kernel"
      return 0
    fi
    vm_cannot "$tag: apt-get download $pkg failed"
    return 1
  fi
  tmp=$VM_FETCHED
  local deb size
  deb=$(echo "$tmp"/*.deb)
  size=$(stat -c %s "$deb")
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" --wildcards './boot/vmlinuz-*' './boot/config-*'
  mv "$tmp"/boot/vmlinuz-* "$dir/vmlinuz"
  mv "$tmp"/boot/config-* "$dir/config"
  rm -rf "$tmp" "$dir/vmlinux"
  vm_boot_image "$dir"
  echo "$pkg $ver" >"$dir/package"
  vm_log "$tag: fetched $pkg $ver ($((size / 1048576)) MiB) in $((SECONDS - t0)) s"
}

# Sets VM_KERNEL to the file QEMU boots of DIR/vmlinuz. amd64: the ELF
# unpacked from the bzImage (once). arm64: vmlinuz itself, the raw Image
# (arm64 boot protocol: "ARM\x64" at 0x38), which needs no unpacking and
# which QEMU loads as it is; it cannot boot an EFI zboot image ("zimg" at
# 4), should Debian ever ship one.
vm_boot_image() { # DIR
  local dir=$1
  if [ "$VM_ARCH" = amd64 ]; then
    [ -f "$dir/vmlinux" ] || vm_unpack_vmlinux "$dir"
    VM_KERNEL="$dir/vmlinux"
    return
  fi
  [ "$(od -An -c -j 4 -N 4 "$dir/vmlinuz" | tr -d ' ')" = zimg ] &&
    vm_die "$dir/vmlinuz: an EFI zboot image, which QEMU's -kernel does not boot"
  [ "$(vm_le32 "$dir/vmlinuz" $((0x38)))" = $((0x644d5241)) ] ||
    vm_die "$dir/vmlinuz: not an arm64 Image"
  VM_KERNEL="$dir/vmlinuz"
}

# Sets VM_BUSYBOX to the guest's busybox, a static one: this machine's
# for amd64; for another architecture, bin/busybox of the busybox-static
# that RELEASE's lists name for it, fetched once into the cache
# (busybox/ARCH). Never installed: it would replace this machine's.
vm_busybox() { # RELEASE
  local dir="$VM_CACHE/busybox/$VM_ARCH" tag tmp f
  VM_BUSYBOX=/bin/busybox
  [ "$VM_ARCH" = amd64 ] && return 0
  VM_BUSYBOX="$dir/busybox"
  [ -x "$VM_BUSYBOX" ] && return 0
  tag=$(vm_tag "$1")
  mkdir -p "$dir"
  exec 8>"$dir/.lock"
  flock 8
  if [ ! -x "$VM_BUSYBOX" ]; then
    if ! vm_download "$1" "$dir" busybox-static; then
      exec 8>&-
      vm_cannot "$tag: apt-get download busybox-static failed"
      return 1
    fi
    tmp=$VM_FETCHED
    # /bin/busybox up to bookworm, /usr/bin/busybox from trixie on.
    dpkg-deb --extract "$tmp"/*.deb "$tmp/root"
    # shellcheck disable=SC2016 # dpkg-deb's fields
    dpkg-deb --show --showformat '${Package} ${Version}\n' "$tmp"/*.deb >"$dir/package"
    for f in "$tmp"/root/{usr/,}bin/busybox; do
      [ -f "$f" ] && mv "$f" "$VM_BUSYBOX" && break
    done
    rm -rf "$tmp"
    [ -x "$VM_BUSYBOX" ] || vm_die "$tag: busybox-static has no bin/busybox"
    vm_log "$tag: fetched $(cat "$dir/package")"
  fi
  exec 8>&-
}

vm_le32() { # FILE OFFSET: the little-endian u32 there
  od -An -tu4 -j "$2" -N 4 "$1" | tr -d ' '
}

# The kernel ELF inside DIR/vmlinuz, to DIR/vmlinux. Under emulation the
# guest took four times as long to decompress its own kernel as to boot
# and run; QEMU starts the ELF directly at its PVH entry (CONFIG_PVH). The
# payload's place is in the bzImage's setup header (boot protocol 2.08:
# payload_offset at 0x248 and payload_length at 0x24c, counted from the
# protected-mode code after the 0x1f1 setup_sects sectors and the boot
# sector). xz and zstd payloads end in the 4-byte size the kernel's own
# decompressor wants, which is no part of their stream.
vm_unpack_vmlinux() { # DIR
  local dir=$1 sects start off len
  sects=$(od -An -tu1 -j $((0x1f1)) -N 1 "$dir/vmlinuz" | tr -d ' ')
  start=$(((sects + 1) * 512))
  off=$(vm_le32 "$dir/vmlinuz" $((0x248)))
  len=$(vm_le32 "$dir/vmlinuz" $((0x24c)))
  local unpack
  case "$(od -An -tx1 -j $((start + off)) -N 4 "$dir/vmlinuz" | tr -d ' ')" in
  fd377a58) unpack="xz -dc" len=$((len - 4)) ;;
  28b52ffd) unpack="zstd -dcq" len=$((len - 4)) ;;
  1f8b08*) unpack="gzip -dc" ;;
  *) vm_die "$dir/vmlinuz: a kernel payload in a format this script does not unpack" ;;
  esac
  dd if="$dir/vmlinuz" iflag=skip_bytes,count_bytes skip=$((start + off)) count="$len" \
    bs=1M status=none | $unpack >"$dir/vmlinux.tmp"
  [ "$(head -c 4 "$dir/vmlinux.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
    vm_die "$dir/vmlinuz: its payload is not an ELF kernel"
  mv "$dir/vmlinux.tmp" "$dir/vmlinux"
}

# Options the guest cannot do without; Debian sets them all to y. Its
# console: the 8250 UART on amd64; on arm64 the PL011, the PCI 16550 (8250
# on the generic PCI host) that carries the command's output, and PSCI,
# through which the guest powers off.
vm_check_config() { # CONFIG
  local opt missing=() console=(SERIAL_8250_CONSOLE)
  [ "$VM_ARCH" = arm64 ] && console=(SERIAL_AMBA_PL011_CONSOLE SERIAL_8250 SERIAL_8250_PCI
    PCI_HOST_GENERIC ARM_PSCI_FW)
  for opt in "${console[@]}" BLK_DEV_INITRD DEVTMPFS TMPFS SHMEM SYSVIPC MEMFD_CREATE \
    CGROUPS BPF_SYSCALL BPF_EVENTS FTRACE_SYSCALLS DEBUG_INFO_BTF; do
    grep -q "^CONFIG_$opt=y" "$1" || missing+=("CONFIG_$opt")
  done
  ((${#missing[@]} == 0)) || vm_die "kernel config $1 lacks built-in ${missing[*]}"
}
