#!/usr/bin/env python3
"""Writes the BTF blob a kernel image carries to a file bpftool reads.

    scripts/btf-from-image.py IMAGE OUT

A kernel built with CONFIG_DEBUG_INFO_BTF keeps its BTF (what
/sys/kernel/btf/vmlinux gives on a running kernel) in a read-only data
section between __start_BTF and __stop_BTF. Debian's arm64 vmlinuz is the
raw Image, without ELF sections, so the blob is found by its header: the
magic 0xeB9F, version 1, flags 0, a 24-byte header, then the offsets and
lengths of the type and string sections. Every candidate is checked
(sections inside the image, strings ending in NUL); the largest wins, and
bpftool, which reads it next, rejects a false one.
    bpftool btf dump file OUT format c > vmlinux/arm64/vmlinux.h
"""
import struct
import sys

HEADER = bytes.fromhex("9feb0100") + struct.pack("<I", 24)


def candidates(image):
    at = image.find(HEADER)
    while at >= 0:
        type_off, type_len, str_off, str_len = struct.unpack_from("<4I", image, at + 8)
        size = 24 + str_off + str_len
        if (type_off == 0 and str_off == type_len and str_len > 0
                and at + size <= len(image) and image[at + size - 1] == 0):
            yield at, size
        at = image.find(HEADER, at + 1)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: btf-from-image.py IMAGE OUT")
    with open(sys.argv[1], "rb") as f:
        image = f.read()
    found = sorted(candidates(image), key=lambda c: c[1])
    if not found:
        sys.exit(f"btf-from-image.py: {sys.argv[1]}: no BTF blob in this image")
    at, size = found[-1]
    with open(sys.argv[2], "wb") as f:
        f.write(image[at:at + size])
    print(f"{sys.argv[1]}: BTF at offset {at:#x}, {size} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
