# bpf_skeleton(<target> NAME <name> SOURCES <a.bpf.c> ...)
#
# Compiles each BPF C source with clang against vmlinux/<arch>/vmlinux.h,
# links the objects into one with `bpftool gen object`, and generates
# <name>.skel.h with `bpftool gen skeleton`. <target> is an INTERFACE library
# that puts the skeleton's directory on the include path. The skeleton embeds
# the object, so the installed binary needs no .o files at run time.

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
  cmake_parse_arguments(ARG "" "NAME" "SOURCES" ${ARGN})
  set(outdir ${CMAKE_CURRENT_BINARY_DIR}/bpf)
  file(MAKE_DIRECTORY ${outdir})
  set(objs)
  file(GLOB headers ${CMAKE_SOURCE_DIR}/bpf/*.h)
  foreach(src ${ARG_SOURCES})
    get_filename_component(stem ${src} NAME_WE)
    set(obj ${outdir}/${stem}.bpf.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_${BPF_ARCH}
              -Wall -Wno-unused-function
              -I${BPF_VMLINUX_DIR} -I${CMAKE_SOURCE_DIR}/bpf
              -c ${src} -o ${obj}
      DEPENDS ${src} ${headers} ${BPF_VMLINUX_DIR}/vmlinux.h
      COMMENT "BPF ${stem}.bpf.c"
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
