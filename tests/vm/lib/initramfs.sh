# shellcheck shell=bash
# The guest's root file system: an uncompressed cpio archive (the guest
# unpacks it faster than it would decompress one under emulation) with
# busybox, the given files at their host paths and each ELF file's shared
# libraries. Sourced by tests/vm/vm.sh.

# Whether PATH is an x86-64 ELF executable or shared object: its ELF
# magic, 64-bit class, e_type 2 or 3 and e_machine 0x3e.
vm_is_program() { # PATH
  local h
  h=$(od -An -tx1 -N 20 "$1" | tr -d ' \n')
  [ "${h:0:10}" = 7f454c4602 ] && [ "${h:36:4}" = 3e00 ] &&
    { [ "${h:32:4}" = 0200 ] || [ "${h:32:4}" = 0300 ]; }
}

# Copies PATH into ROOT at the same path. A program or library of this
# machine goes in without its debug info and brings the libraries ldd
# resolves for it; anything else (a BPF object, a script) is copied.
vm_add_file() { # ROOT PATH
  local root=$1 path=$2 lib
  [ -e "$root$path" ] && return 0
  mkdir -p "$root$(dirname "$path")"
  if [ -d "$path" ]; then
    cp -a "$path/." "$root$path/"
  elif vm_is_program "$path"; then
    # Stripped copies: debug info would make an archive of hundreds of MiB.
    objcopy --strip-debug "$path" "$root$path"
    for lib in $(ldd "$path" 2>/dev/null | grep -oE '(^|\s)/[^ ]+' | tr -d ' \t'); do
      vm_add_file "$root" "$lib"
    done
  else
    cp -a "$path" "$root$path"
  fi
}

# Writes the archive to OUT. TOP's files go to the archive's root (the
# guest's /init among them); FILES go in as above.
vm_initramfs() { # OUT TOP FILES...
  local out=$1 top=$2 root
  shift 2
  root=$(mktemp -d)
  mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc,root}
  chmod 1777 "$root/tmp"
  cp /bin/busybox "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  cp -a "$top/." "$root/"
  # A libc without ld.so.cache looks in the trusted directories only;
  # the cache makes the multiarch ones certain.
  printf '%s\n' /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu >"$root/etc/ld.so.conf"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  echo 'root:x:0:' >"$root/etc/group"
  local f
  for f in "$@"; do
    vm_add_file "$root" "$(realpath -s "$f")"
  done
  ldconfig -r "$root" 2>/dev/null || true
  (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$out"
  rm -rf "$root"
}
