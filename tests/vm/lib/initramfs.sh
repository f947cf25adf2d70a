# shellcheck shell=bash
# The guest's root file system: an uncompressed cpio archive (the guest
# unpacks it faster than it would decompress one under emulation) with
# busybox, the given files at their host paths and each ELF file's shared
# libraries. Sourced by tests/vm/vm.sh.

# A 64-bit ELF executable or shared object's e_machine, as 4 hex digits
# (3e00 x86-64, b700 aarch64); nothing for any other file.
vm_elf_machine() { # PATH
  local h
  h=$(od -An -tx1 -N 20 "$1" | tr -d ' \n')
  [ "${h:0:10}" = 7f454c4602 ] && { [ "${h:32:4}" = 0200 ] || [ "${h:32:4}" = 0300 ]; } &&
    echo "${h:36:4}"
  return 0
}

# The guest's ELF machine and the tools that read and strip its files.
vm_elf_tools() {
  VM_MACHINE=3e00 VM_TRIPLET=x86_64-linux-gnu VM_OBJCOPY=objcopy
  if [ "$VM_ARCH" = arm64 ]; then
    VM_MACHINE=b700 VM_TRIPLET=aarch64-linux-gnu VM_OBJCOPY=aarch64-linux-gnu-objcopy
  fi
}

# The shared libraries PATH needs and its interpreter. On amd64, what ldd
# finds (recursively). ldd runs the program's own ld.so, which cannot run
# a foreign ELF: there each DT_NEEDED is looked up as ld.so would, in the
# RUNPATH and the multiarch directories (where Debian installs a foreign
# architecture's libraries), and vm_add_file asks the same of each library
# it adds. The interpreter comes by its path (a link) and the file it
# names.
vm_needed() { # PATH
  if [ "$VM_ARCH" = amd64 ]; then
    ldd "$1" 2>/dev/null | grep -oE '(^|\s)/[^ ]+' | tr -d ' \t'
    return 0
  fi
  local elf interp runpath lib dir
  elf=$(aarch64-linux-gnu-readelf -ldW "$1")
  interp=$(echo "$elf" | sed -n 's/.*Requesting program interpreter: \(.*\)]$/\1/p')
  [ -z "$interp" ] || printf '%s\n' "$interp" "$(realpath "$interp")"
  runpath=$(echo "$elf" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]$/\2/p')
  # shellcheck disable=SC2016 # the literal $ORIGIN
  runpath=${runpath//'$ORIGIN'/$(dirname "$1")}
  for lib in $(echo "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
    for dir in ${runpath//:/ } "/lib/$VM_TRIPLET" "/usr/lib/$VM_TRIPLET"; do
      if [ -e "$dir/$lib" ]; then
        echo "$dir/$lib"
        continue 2
      fi
    done
    vm_die "$1 needs $lib, which is not in /usr/lib/$VM_TRIPLET (apt-get install the $VM_ARCH package that has it)"
  done
}

# Copies PATH into ROOT at the same path. A program or library of the
# guest's architecture goes in without its debug info and brings the
# libraries it needs; one of another architecture is refused; anything
# else (a BPF object, a script) is copied.
vm_add_file() { # ROOT PATH
  local root=$1 path=$2 machine libs lib
  [ -e "$root$path" ] && return 0
  mkdir -p "$root$(dirname "$path")"
  [ -d "$path" ] || machine=$(vm_elf_machine "$path")
  if [ -d "$path" ]; then
    cp -a "$path/." "$root$path/"
  elif [ "$machine" = "$VM_MACHINE" ]; then
    # Stripped copies: debug info would make an archive of hundreds of MiB.
    "$VM_OBJCOPY" --strip-debug "$path" "$root$path"
    libs=$(vm_needed "$path")
    for lib in $libs; do
      vm_add_file "$root" "$lib"
    done
  elif [ -n "$machine" ]; then
    vm_die "$path is a program of another architecture than the guest's ($VM_ARCH)"
  else
    cp -a "$path" "$root$path"
  fi
}

# Writes the archive to OUT. TOP's files go to the archive's root (the
# guest's /init among them); FILES go in as above.
vm_initramfs() { # OUT TOP FILES...
  local out=$1 top=$2 root
  shift 2
  vm_elf_tools
  root=$(mktemp -d)
  mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc,root}
  chmod 1777 "$root/tmp"
  cp "$VM_BUSYBOX" "$root/bin/busybox"
  ln -s busybox "$root/bin/sh"
  cp -a "$top/." "$root/"
  # A libc without ld.so.cache looks in the trusted directories only
  # (Debian's ld.so has the multiarch ones among them); the cache makes
  # them certain. This machine's ldconfig writes a cache for its own
  # architecture only, which a foreign ld.so passes over: there the
  # trusted directories find the libraries.
  printf '%s\n' "/lib/$VM_TRIPLET" "/usr/lib/$VM_TRIPLET" >"$root/etc/ld.so.conf"
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  echo 'root:x:0:' >"$root/etc/group"
  local f
  for f in "$@"; do
    vm_add_file "$root" "$(realpath -s "$f")"
  done
  if [ "$VM_ARCH" = amd64 ]; then
    ldconfig -r "$root" 2>/dev/null || true
  fi
  (cd "$root" && find . -print0 | cpio --null -o -H newc --quiet) >"$out"
  rm -rf "$root"
}
