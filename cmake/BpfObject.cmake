# bpf_skeleton(<target> NAME <name> SOURCES <a.bpf.c> ...
#              [COMPAT_SOURCES <a.bpf.c> ...] [NOATOMIC_SOURCES <a.bpf.c> ...])
#
# Compiles each BPF C source with clang against vmlinux/<arch>/vmlinux.h to
# LLVM IR (the front end only), joins a build's sources into one object
# (llvm-link; then opt -O2 over the joined module, which is where the BPF
# target's CO-RE passes run: run per source before the join, as clang -O2
# does, the joined object's field relocations came out wrong, and the
# verifier saw the light programs read past the end of struct file; then
# llc), links the builds' objects into one with `bpftool gen object`, and
# generates <name>.skel.h with `bpftool gen skeleton`. One object per build,
# not per source, because libbpf 1.1's linker fails on a kfunc extern
# (the fast build's bpf_rdonly_cast) declared in more than one object:
# within a build, every source may call it. <target> is an INTERFACE library
# that puts the skeleton's directory on the include path. The skeleton embeds
# the object, so the installed binary needs no .o files at run time.
#
# COMPAT_SOURCES are compiled once more with -DSHMBPF_COMPAT and
# NOATOMIC_SOURCES with -DSHMBPF_COMPAT -DSHMBPF_NO_ATOMICS, into the same
# object: the builds for older kernels (bpf/core_fixes.bpf.h says what each
# leaves out; the sources name their programs apart).

find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPF_LLVM_LINK NAMES llvm-link llvm-link-14 REQUIRED)
find_program(BPF_OPT NAMES opt opt-14 REQUIRED)
find_program(BPF_LLC NAMES llc llc-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|amd64")
  set(BPF_ARCH x86)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
  set(BPF_ARCH arm64)
else()
  message(FATAL_ERROR "shmbpf: no vmlinux.h for ${CMAKE_SYSTEM_PROCESSOR}; see vmlinux/README.md")
endif()
set(BPF_VMLINUX_DIR ${CMAKE_SOURCE_DIR}/vmlinux/${BPF_ARCH})
if(NOT EXISTS ${BPF_VMLINUX_DIR}/vmlinux.h)
  message(FATAL_ERROR "shmbpf: ${BPF_VMLINUX_DIR}/vmlinux.h is missing; see vmlinux/README.md")
endif()

function(bpf_skeleton target)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;COMPAT_SOURCES;NOATOMIC_SOURCES" ${ARGN})
  set(outdir ${CMAKE_CURRENT_BINARY_DIR}/bpf)
  file(MAKE_DIRECTORY ${outdir})
  set(objs)
  file(GLOB headers ${CMAKE_SOURCE_DIR}/bpf/*.h)
  # build: fast, compat or compat_noatomic
  foreach(build fast compat compat_noatomic)
    if(build STREQUAL "fast")
      set(sources ${ARG_SOURCES})
      set(defines)
    elseif(build STREQUAL "compat")
      set(sources ${ARG_COMPAT_SOURCES})
      set(defines -DSHMBPF_COMPAT)
    else()
      set(sources ${ARG_NOATOMIC_SOURCES})
      set(defines -DSHMBPF_COMPAT -DSHMBPF_NO_ATOMICS)
    endif()
    if(NOT sources)
      continue()
    endif()
    set(irs)
    foreach(src ${sources})
      get_filename_component(stem ${src} NAME_WE)
      set(ir ${outdir}/${stem}.${build}.bc)
      add_custom_command(
        OUTPUT ${ir}
        COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${BPF_ARCH} ${defines}
                -Wall -Wno-unused-function
                -I${BPF_VMLINUX_DIR} -I${CMAKE_SOURCE_DIR}/bpf
                -Xclang -disable-llvm-passes -emit-llvm -c ${src} -o ${ir}
        DEPENDS ${src} ${headers} ${BPF_VMLINUX_DIR}/vmlinux.h
        COMMENT "BPF ${stem}.bpf.c ${build}"
        VERBATIM)
      list(APPEND irs ${ir})
    endforeach()
    set(obj ${outdir}/${ARG_NAME}.${build}.bpf.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${BPF_LLVM_LINK} ${irs} -o ${obj}.linked.bc
      COMMAND ${BPF_OPT} -O2 -mtriple=bpf -mcpu=v3 ${obj}.linked.bc -o ${obj}.bc
      COMMAND ${BPF_LLC} -march=bpf -mcpu=v3 -filetype=obj ${obj}.bc -o ${obj}
      DEPENDS ${irs}
      COMMENT "BPF ${ARG_NAME} ${build} build"
      VERBATIM)
    list(APPEND objs ${obj})
  endforeach()
  set(linked ${outdir}/${ARG_NAME}.bpf.o)
  set(skel ${outdir}/${ARG_NAME}.skel.h)
  add_custom_command(
    OUTPUT ${linked} ${skel}
    COMMAND ${BPFTOOL} gen object ${linked} ${objs}
    COMMAND ${BPFTOOL} gen skeleton ${linked} name ${ARG_NAME} > ${skel}
    DEPENDS ${objs}
    COMMENT "BPF skeleton ${ARG_NAME}.skel.h"
    VERBATIM)
  add_custom_target(${target}_gen DEPENDS ${skel})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_gen)
  target_include_directories(${target} INTERFACE ${outdir})
endfunction()
