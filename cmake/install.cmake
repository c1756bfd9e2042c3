# What `cmake --install` installs, in two components (cpack makes one Debian package of each,
# cmake/package.cmake):
#
#   runtime      bin/fencelock; <sysconfdir>/fencelock/fencelock.conf; the systemd unit
#                lib/systemd/system/fencelock.service; the man page fencelock(1); the bash and
#                zsh completions; the documentation
#   development  include/fencelock/ (the public headers only); the static libraries an embedder
#                links; the CMake package (find_package(fencelock): fencelock::service,
#                fencelock::client, fencelock::fence_guard); the pkg-config files
#
# With CMAKE_INSTALL_PREFIX=/usr (quickstart.sh, packages) the configuration file goes to
# /etc/fencelock, which is where docs/deployment.md and the unit expect it; with another prefix
# to <prefix>/etc/fencelock. The unit names the installed paths.
include(CMakePackageConfigHelpers)

set(FENCELOCK_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/fencelock)
set(FENCELOCK_CONFDIR ${CMAKE_INSTALL_FULL_SYSCONFDIR}/fencelock)
set(FENCELOCK_BINDIR ${CMAKE_INSTALL_FULL_BINDIR})
set(FENCELOCK_DOCDIR ${CMAKE_INSTALL_FULL_DOCDIR})
set(FENCELOCK_UNITDIR lib/systemd/system)

# --- runtime ---------------------------------------------------------------------------------
install(TARGETS fencelock RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)

# The documented configuration file, every setting at its default but data-dir: the unit's
# state directory, /var/lib/fencelock.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
             ${PROJECT_SOURCE_DIR}/config/fencelock.conf)
file(READ ${PROJECT_SOURCE_DIR}/config/fencelock.conf fencelock_conf)
set(fencelock_conf_default "# Env: FENCELOCK_DATA_DIR\ndata-dir = ./data\n")
string(FIND "${fencelock_conf}" "${fencelock_conf_default}" fencelock_conf_at)
if(fencelock_conf_at LESS 0)
  message(FATAL_ERROR "config/fencelock.conf: no \"data-dir = ./data\" line to install")
endif()
string(REPLACE "${fencelock_conf_default}"
       "# Env: FENCELOCK_DATA_DIR\n# Installed: the state directory of fencelock.service (the built-in default is ./data).\ndata-dir = /var/lib/fencelock\n"
       fencelock_conf "${fencelock_conf}")
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/fencelock.conf CONTENT "${fencelock_conf}")
install(FILES ${PROJECT_BINARY_DIR}/fencelock.conf DESTINATION ${FENCELOCK_CONFDIR}
        COMPONENT runtime)

configure_file(${PROJECT_SOURCE_DIR}/config/fencelock.service.in
               ${PROJECT_BINARY_DIR}/fencelock.service @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fencelock.service DESTINATION ${FENCELOCK_UNITDIR}
        COMPONENT runtime)

# The man page and the completions, written by the binary itself from its command definitions.
# fencelock_generate(<file> <argument>...) writes what `fencelock <argument>...` prints.
function(fencelock_generate name)
  add_custom_command(
    OUTPUT ${PROJECT_BINARY_DIR}/${name}
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:fencelock> "-DARGS=${ARGN}"
            -DOUTPUT=${PROJECT_BINARY_DIR}/${name} -P ${PROJECT_SOURCE_DIR}/cmake/run_to_file.cmake
    DEPENDS fencelock ${PROJECT_SOURCE_DIR}/cmake/run_to_file.cmake
    COMMENT "Writing ${name} with the fencelock binary"
    VERBATIM)
endfunction()
fencelock_generate(fencelock.1 manpage)
fencelock_generate(fencelock.bash completion bash)
fencelock_generate(_fencelock completion zsh)
set(fencelock_generated ${PROJECT_BINARY_DIR}/fencelock.1 ${PROJECT_BINARY_DIR}/fencelock.bash
                        ${PROJECT_BINARY_DIR}/_fencelock)
# Debian ships man pages compressed (gzip -n: no name or time stamp, so builds reproduce).
find_program(FENCELOCK_GZIP gzip REQUIRED)
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/fencelock.1.gz
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=${FENCELOCK_GZIP} "-DARGS=-9n;-c;${PROJECT_BINARY_DIR}/fencelock.1"
          -DOUTPUT=${PROJECT_BINARY_DIR}/fencelock.1.gz -P ${PROJECT_SOURCE_DIR}/cmake/run_to_file.cmake
  DEPENDS ${PROJECT_BINARY_DIR}/fencelock.1
  VERBATIM)
add_custom_target(fencelock_generated_docs ALL
                  DEPENDS ${fencelock_generated} ${PROJECT_BINARY_DIR}/fencelock.1.gz)
install(FILES ${PROJECT_BINARY_DIR}/fencelock.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT runtime)
install(FILES ${PROJECT_BINARY_DIR}/fencelock.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME fencelock
        COMPONENT runtime)
install(FILES ${PROJECT_BINARY_DIR}/_fencelock
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zsh/vendor-completions COMPONENT runtime)

file(GLOB fencelock_docs ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${fencelock_docs} ${PROJECT_SOURCE_DIR}/docs/openapi.json
        DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)

# --- development -----------------------------------------------------------------------------
# The public headers: include/fencelock/ alone (no Beast, hiredis or sqlite in them).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fencelock
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)

# One export set per component, so that a client-only program needs neither CAF nor SQLite:
# find_package(fencelock CONFIG REQUIRED COMPONENTS client).
set_target_properties(fencelock_common PROPERTIES EXPORT_NAME common)
set_target_properties(fencelock_core PROPERTIES EXPORT_NAME service)
set_target_properties(fencelock_client PROPERTIES EXPORT_NAME client)
set_target_properties(fencelock_fence PROPERTIES EXPORT_NAME fence_guard)
foreach(component_targets "service|fencelock_common;fencelock_core" "client|fencelock_client"
                          "fence_guard|fencelock_fence")
  string(REPLACE "|" ";" parts "${component_targets}")
  list(POP_FRONT parts component)
  install(TARGETS ${parts} EXPORT fencelock-${component}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
  install(EXPORT fencelock-${component}-targets NAMESPACE fencelock::
          DESTINATION ${FENCELOCK_INSTALL_CMAKEDIR} COMPONENT development)
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fencelock-config.cmake.in
                              ${PROJECT_BINARY_DIR}/fencelock-config.cmake
                              INSTALL_DESTINATION ${FENCELOCK_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fencelock-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fencelock-config.cmake
              ${PROJECT_BINARY_DIR}/fencelock-config-version.cmake
              # Debian's libcaf-dev has no CMake package: consumers find CAF with ours.
              ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
        DESTINATION ${FENCELOCK_INSTALL_CMAKEDIR} COMPONENT development)

# pkg-config, relocatable: each file finds the prefix from its own place (${pcfiledir}).
file(RELATIVE_PATH FENCELOCK_PC_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" FENCELOCK_PC_PREFIX "${FENCELOCK_PC_PREFIX}")
foreach(pc fencelock-service fencelock-client fencelock-fence-guard)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
          COMPONENT development)
endforeach()
