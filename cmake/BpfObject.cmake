# bpf_skeleton(<target> NAME <name> SOURCES <a.bpf.c> ...
#              [COMPAT_SOURCES <a.bpf.c> ...] [NOATOMIC_SOURCES <a.bpf.c> ...])
#
# Compiles each BPF C source with clang against vmlinux/<arch>/vmlinux.h,
# links the objects into one with `bpftool gen object`, and generates
# <name>.skel.h with `bpftool gen skeleton`. <target> is an INTERFACE library
# that puts the skeleton's directory on the include path. The skeleton embeds
# the object, so the installed binary needs no .o files at run time.
#
# COMPAT_SOURCES are compiled once more with -DSHMBPF_COMPAT and
# NOATOMIC_SOURCES with -DSHMBPF_COMPAT -DSHMBPF_NO_ATOMICS, into the same
# object: the builds for older kernels (bpf/core_fixes.bpf.h says what each
# leaves out; the sources name their programs apart).

find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
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
  # build: "" (the fast one), compat or compat_noatomic
  foreach(build "" compat compat_noatomic)
    if(build STREQUAL "")
      set(sources ${ARG_SOURCES})
      set(defines)
      set(ext .bpf.o)
    elseif(build STREQUAL "compat")
      set(sources ${ARG_COMPAT_SOURCES})
      set(defines -DSHMBPF_COMPAT)
      set(ext .${build}.bpf.o)
    else()
      set(sources ${ARG_NOATOMIC_SOURCES})
      set(defines -DSHMBPF_COMPAT -DSHMBPF_NO_ATOMICS)
      set(ext .${build}.bpf.o)
    endif()
    foreach(src ${sources})
      get_filename_component(stem ${src} NAME_WE)
      set(obj ${outdir}/${stem}${ext})
      add_custom_command(
        OUTPUT ${obj}
        COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${BPF_ARCH} ${defines}
                -Wall -Wno-unused-function
                -I${BPF_VMLINUX_DIR} -I${CMAKE_SOURCE_DIR}/bpf
                -c ${src} -o ${obj}
        DEPENDS ${src} ${headers} ${BPF_VMLINUX_DIR}/vmlinux.h
        COMMENT "BPF ${stem}.bpf.c ${build}"
        VERBATIM)
      list(APPEND objs ${obj})
    endforeach()
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
