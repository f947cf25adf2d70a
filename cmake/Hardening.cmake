# Debian's hardening flags (dpkg-buildflags with hardening=+all) for every
# object of a normal build: the shipped binary is what they protect, and
# the libraries linked into it are compiled with them too.
#   stack protector and stack clash protection, -D_FORTIFY_SOURCE=2 (checked
#   string and memory calls; it needs optimisation), full RELRO with
#   immediate binding (-z relro -z now), and a position-independent
#   executable.
# Sanitizer and fuzz builds go without them: ASan replaces the checked
# calls FORTIFY adds, and the two report the same faults differently.
option(SHMBPF_HARDENING "Compile and link with Debian's hardening flags" ON)

if(SHMBPF_HARDENING AND SHMBPF_SANITIZE STREQUAL "")
  include(CheckPIESupported)
  check_pie_supported()
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
  add_compile_options(-fstack-protector-strong -fstack-clash-protection -Wformat
                      -Werror=format-security)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    add_compile_options(-fcf-protection)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
    add_compile_options(-mbranch-protection=standard)
  endif()
  # Only where the build optimises: FORTIFY checks nothing at -O0 and warns.
  add_compile_definitions($<$<NOT:$<CONFIG:Debug>>:_FORTIFY_SOURCE=2>)
  add_link_options(-Wl,-z,relro -Wl,-z,now)
endif()
