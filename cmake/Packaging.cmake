# A release a user installs without building: `cmake --build build --target package` writes
# loom-<version>-linux-x86_64.tar.gz and loom_<version>_amd64.deb into the build dir. Both hold
# the self-contained `loom` (nothing to install on the nodes: YARN ships it), the Python API as a
# wheel, and the README; and loom-kerberos, the client for Kerberized clusters (src/cli).

set(LOOM_WHEEL ${CMAKE_BINARY_DIR}/python-dist/loom-${PROJECT_VERSION}-py3-none-any.whl)
file(GLOB LOOM_PYTHON_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/python/loom/*.py)
# The package's own PEP 517 backend writes the wheel with the standard library alone.
add_custom_command(OUTPUT ${LOOM_WHEEL}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/python-dist
  COMMAND /usr/bin/python3 -c
          "import sys; sys.path.insert(0, sys.argv[1]); import loom_build; loom_build.build_wheel(sys.argv[2])"
          ${PROJECT_SOURCE_DIR}/python/_build ${CMAKE_BINARY_DIR}/python-dist
  DEPENDS ${LOOM_PYTHON_SOURCES} ${PROJECT_SOURCE_DIR}/python/pyproject.toml
          ${PROJECT_SOURCE_DIR}/python/_build/loom_build.py
  COMMENT "Building the loom Python wheel"
  VERBATIM)
add_custom_target(python_wheel ALL DEPENDS ${LOOM_WHEEL})

install(TARGETS loom loom-kerberos RUNTIME DESTINATION bin)
install(FILES ${LOOM_WHEEL} DESTINATION share/loom/python)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/loom)

set(CPACK_PACKAGE_NAME loom)
set(CPACK_PACKAGE_VENDOR "Loom")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Distributed deep-learning training on YARN, Slurm or one machine")
set(CPACK_PACKAGE_FILE_NAME loom-${PROJECT_VERSION}-linux-x86_64)
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_PACKAGE_CHECKSUM SHA256)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "Loom developers <loom@localhost>")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
# `loom` is static; loom-kerberos needs this distribution's glibc and C++ runtime, which
# dpkg-shlibdeps names. Kerberos logins load MIT's GSSAPI library; tasks run bash and python3.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "bash, python3, python3-cloudpickle, libgssapi-krb5-2")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "openmpi-bin")
include(CPack)
