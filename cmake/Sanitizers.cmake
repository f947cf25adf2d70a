# Sanitizer and fuzzing builds (README, Tests). Each needs a build directory
# of its own: every object is compiled with the sanitizer's instrumentation.
#
#   -DSHMBPF_SANITIZE=address,undefined   ASan + UBSan; UB aborts the test
#   -DSHMBPF_SANITIZE=thread              TSan
#   -DSHMBPF_FUZZ=ON                      libFuzzer targets (tests/fuzz), clang
#                                         only; implies address,undefined
#
# A fuzz build is also a complete ASan + UBSan build: its libraries carry
# libFuzzer's coverage hooks too (fuzzer-no-link), which the sanitizer
# runtime stubs out in the programs that are not fuzz targets, so one build
# directory serves both layers and the libraries are compiled once.

set(SHMBPF_SANITIZE "" CACHE STRING "Sanitizers for every object: address,undefined or thread")
option(SHMBPF_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; implies ASan + UBSan)" OFF)

if(SHMBPF_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "SHMBPF_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++ "
                        "-DCMAKE_C_COMPILER=clang")
  endif()
  if(SHMBPF_SANITIZE STREQUAL "")
    set(SHMBPF_SANITIZE "address,undefined")
  elseif(SHMBPF_SANITIZE MATCHES "thread")
    message(FATAL_ERROR "SHMBPF_FUZZ runs under ASan + UBSan, not with SHMBPF_SANITIZE=thread")
  endif()
endif()

if(NOT SHMBPF_SANITIZE STREQUAL "")
  if(SHMBPF_JEMALLOC)
    # The sanitizers replace malloc themselves: a second allocator linked in
    # statically would take the calls they must see.
    message(STATUS "shmbpf: SHMBPF_SANITIZE=${SHMBPF_SANITIZE}: jemalloc off")
    set(SHMBPF_JEMALLOC OFF)
  endif()
  # Frame pointers give whole stacks in reports at little cost; a report
  # about undefined behaviour stops the program, so a test cannot pass
  # over one.
  add_compile_options(-fsanitize=${SHMBPF_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${SHMBPF_SANITIZE})
endif()

# The userspace libraries of a fuzz build report their coverage to libFuzzer.
function(shmbpf_fuzz_instrument target)
  if(SHMBPF_FUZZ)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
  endif()
endfunction()
