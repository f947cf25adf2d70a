# What `cmake --install` puts where, and the .deb CPack builds from it:
#   cd build && cpack -G DEB      -> shmbpf_<version>_<arch>.deb
# The binary in sbin, the systemd unit and its /etc/default file, the
# Prometheus rules, one man page per command (docs/man, gzipped as Debian
# wants them), the copyright and changelog, and the maintainer scripts
# (deploy/debian).

# Man pages: the version filled in, then compressed (-n: no name or time
# in the header, so that two builds of one page are the same bytes).
file(GLOB shmbpf_man_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/docs/man/*.8)
set(shmbpf_man_pages "")
foreach(src ${shmbpf_man_sources})
  get_filename_component(page ${src} NAME)
  set(configured ${CMAKE_BINARY_DIR}/man/${page})
  configure_file(${src} ${configured} @ONLY)
  add_custom_command(OUTPUT ${configured}.gz
    COMMAND gzip -9 -n -c ${configured} > ${configured}.gz
    DEPENDS ${configured}
    COMMENT "gzip ${page}")
  list(APPEND shmbpf_man_pages ${configured}.gz)
endforeach()
add_custom_target(shmbpf_man ALL DEPENDS ${shmbpf_man_pages})

# The changelog, compressed the same way. The version has no Debian
# revision (a native package), so its name is changelog.gz, not
# changelog.Debian.gz.
set(shmbpf_changelog ${CMAKE_BINARY_DIR}/debian/changelog.gz)
add_custom_command(OUTPUT ${shmbpf_changelog}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/debian
  COMMAND gzip -9 -n -c ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/changelog > ${shmbpf_changelog}
  DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/changelog
  COMMENT "gzip changelog")
add_custom_target(shmbpf_changelog ALL DEPENDS ${shmbpf_changelog})

# Shell completion, written by the binary itself (shmbpf completion): where
# Debian's bash-completion, zsh and fish look. A cross build has a binary
# that cannot run here: its scripts come from the emulator, if one is set.
if(NOT CMAKE_CROSSCOMPILING OR CMAKE_CROSSCOMPILING_EMULATOR)
  set(shmbpf_completion_dir ${CMAKE_BINARY_DIR}/completion)
  set(shmbpf_completions "")
  foreach(shell bash zsh fish)
    set(out ${shmbpf_completion_dir}/shmbpf.${shell})
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${shmbpf_completion_dir}
      COMMAND ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:shmbpf> completion ${shell} > ${out}
      DEPENDS shmbpf
      COMMENT "shmbpf completion ${shell}")
    list(APPEND shmbpf_completions ${out})
  endforeach()
  add_custom_target(shmbpf_completion ALL DEPENDS ${shmbpf_completions})
  install(FILES ${shmbpf_completion_dir}/shmbpf.bash
          DESTINATION share/bash-completion/completions RENAME shmbpf)
  install(FILES ${shmbpf_completion_dir}/shmbpf.zsh
          DESTINATION share/zsh/vendor-completions RENAME _shmbpf)
  install(FILES ${shmbpf_completion_dir}/shmbpf.fish DESTINATION share/fish/vendor_completions.d)
endif()

install(TARGETS shmbpf RUNTIME DESTINATION sbin)
install(FILES ${shmbpf_man_pages} DESTINATION share/man/man8)
install(FILES deploy/prometheus/shmbpf-rules.yml DESTINATION share/shmbpf/prometheus)
# Where Debian 12's packages put their units (its /lib is /usr/lib); the
# unit starts /usr/sbin/shmbpf, the .deb's path.
install(FILES deploy/systemd/shmbpf.service DESTINATION /lib/systemd/system)
# The unit's arguments (SHMBPF_ARGS), a conffile (deploy/debian/conffiles).
install(FILES deploy/systemd/shmbpf.default DESTINATION /etc/default RENAME shmbpf)
install(FILES deploy/debian/copyright ${shmbpf_changelog} DESTINATION share/doc/shmbpf)

# cpack and `make install` package what is built and build nothing
# themselves: the .deb's test runs beside the other tests of this tree,
# which must not be relinked under them (cmake --build first).
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_PACKAGE_NAME shmbpf)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "shmbpf maintainers <maintainers@users.noreply.a-seed-8c460627.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "see who creates, holds and leaks shared memory (tmpfs, memfd, System V)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# The libraries the binary links, as dpkg-shlibdeps finds them (libbpf,
# libelf, ncurses, libmicrohttpd, cpp-httplib, the C and C++ runtimes).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# A cross build's package is the target's (CPack would ask dpkg, which
# answers the host's), and dpkg-shlibdeps must read the target's libraries
# (their packages of that architecture, its objdump): DEB_HOST_ARCH, set
# while CPack runs.
if(CMAKE_CROSSCOMPILING)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  else()
    message(FATAL_ERROR "shmbpf: no Debian architecture for ${CMAKE_SYSTEM_PROCESSOR}")
  endif()
  set(shmbpf_cpack_config ${CMAKE_BINARY_DIR}/CPackCross.cmake)
  file(WRITE ${shmbpf_cpack_config} "set(ENV{DEB_HOST_ARCH} ${CPACK_DEBIAN_PACKAGE_ARCHITECTURE})\n")
  set(CPACK_PROJECT_CONFIG_FILE ${shmbpf_cpack_config})
endif()
# adduser: the postinst makes the group shmbpf with addgroup. dpkg-shlibdeps
# adds the libraries to it.
set(CPACK_DEBIAN_PACKAGE_DEPENDS adduser)
# postinst, prerm, postrm (what dh_installsystemd would write for a unit
# not enabled at install, restarted after an upgrade where it runs) and
# conffiles, with Debian's modes whatever the checkout's.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postrm
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# After the summary line, which CPack writes first; lines of 80 characters
# at most (Debian's policy, lintian's extended-description-line-too-long).
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "shmbpf observes shared memory on Linux with BPF programs on tracepoints:
files on tmpfs and hugetlbfs (/dev/shm and the /dev/shm of containers),
memfds and System V segments. It says who created each segment, who holds
it, how many bytes it pins, and which ones nobody holds after their creator
is gone. shmbpf serve, the host's agent, serves this to Prometheus; the
package has its systemd unit (not enabled) and alerting rules.")
include(CPack)
