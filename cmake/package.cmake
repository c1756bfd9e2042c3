# The Debian packages, built with `cpack -G DEB` in the build directory (or
# `cmake --build build --target package`), one per install component (cmake/install.cmake):
#
#   fencelock      the server and CLI, the systemd unit, /etc/fencelock/fencelock.conf (a
#                  conffile), the man page, completions, docs; Depends computed from the binary
#                  by dpkg-shlibdeps (dpkg-dev), plus adduser; Suggests redis-server. Its
#                  maintainer scripts (config/debian/) create the system user fencelock and
#                  enable and start the unit.
#   fencelock-dev  headers, static libraries, the CMake package and the pkg-config files;
#                  Depends on the -dev packages the libraries need.
#
# Packages describe an installation under /usr: configure with -DCMAKE_INSTALL_PREFIX=/usr
# (quickstart.sh does), so that the unit and the configuration file name the paths the package
# holds.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "fencelock: cpack makes Debian packages for CMAKE_INSTALL_PREFIX=/usr "
                 "(this build: ${CMAKE_INSTALL_PREFIX})")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME fencelock)
set(CPACK_PACKAGE_VENDOR "fencelock")
set(CPACK_PACKAGE_CONTACT "fencelock maintainers <fencelock@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
# /etc/fencelock is an absolute destination: stage everything under DESTDIR.
set(CPACK_SET_DESTDIR ON)
set(CPACK_COMPONENTS_ALL runtime development)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME fencelock)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
# The first line is the synopsis (Debian policy 5.6.13); one string, not a list.
string(CONCAT CPACK_DEBIAN_RUNTIME_DESCRIPTION
       "distributed lock service with fencing tokens\n"
       "fencelock grants each lock with a fencing token, an integer that grows with every grant "
       "and is never reused, so that a resource which checks tokens refuses a stale holder's "
       "write. It serves HTTP/JSON and WebSocket, keeps leases durable in SQLite or shares them "
       "through Redis, and comes with a CLI (fencelock run -- <command>) and a systemd unit.")
# The shared libraries the binary links (libcaf-core, libsqlite3, libhiredis, libsystemd...).
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
# Added to what dpkg-shlibdeps finds: the postinst's adduser and deb-systemd-helper.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "adduser, init-system-helpers (>= 1.54~)")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "redis-server")
# The configuration file is the administrator's: dpkg keeps their changes on upgrade.
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/debian/conffiles
     CONTENT "${FENCELOCK_CONFDIR}/fencelock.conf\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/config/debian/postinst ${PROJECT_SOURCE_DIR}/config/debian/prerm
    ${PROJECT_SOURCE_DIR}/config/debian/postrm ${PROJECT_BINARY_DIR}/debian/conffiles)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME fencelock-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
string(CONCAT CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION
       "fencelock libraries and headers: embed the service, use the client\n"
       "The static libraries, public headers, CMake package (find_package(fencelock): "
       "fencelock::service, fencelock::client, fencelock::fence_guard) and pkg-config files of "
       "fencelock, the distributed lock service with fencing tokens.")
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS
    "libcaf-dev (>= 0.17), libboost1.81-dev, libboost-json1.81-dev, libsqlite3-dev, prometheus-cpp-dev, libhiredis-dev, libspdlog-dev, pkg-config")

include(CPack)
