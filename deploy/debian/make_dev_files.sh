#!/usr/bin/env bash
# Writes what build systems read to use the installed library: ringwork.pc
# (pkg-config) and RingworkConfig.cmake, RingworkConfigVersion.cmake (CMake's
# find_package), for the Debian layout (/usr/include/ringwork,
# /usr/lib/x86_64-linux-gnu). Used by deploy/debian/BUILD.
#
#   make_dev_files.sh VERSION LINK_FLAGS_FILE OUT_PC OUT_CONFIG OUT_CONFIG_VERSION
#
# An app links libringwork and the libraries whose headers Ringwork's public
# headers include (Abseil, gRPC, protobuf, oneDNN): it calls their inline code.
# The rest (HDF5, PNG, JPEG, libzip, ...) only libringwork calls; they are
# Libs.private, for static links (pkg-config --static, Ringwork::ringwork_static).
set -euo pipefail
version=$1 flags_file=$2 out_pc=$3 out_config=$4 out_config_version=$5
major=${version%%.*}
public=() private=()
while read -r flag; do
  [[ -z "$flag" ]] && continue
  if [[ "$flag" =~ ^-l(absl_.*|grpc\+\+|grpc|gpr|protobuf|dnnl)$ ]]; then
    public+=("$flag")
  else
    private+=("$flag")
  fi
done < "$flags_file"

cat > "$out_pc" <<PC
prefix=/usr
libdir=\${prefix}/lib/x86_64-linux-gnu
includedir=\${prefix}/include

Name: Ringwork
Description: Synchronous data-parallel training on CPU clusters (MultiWorkerMirroredStrategy and a Keras-like model API in C++)
Version: $version
Cflags: -std=c++17 -DJSON_DIAGNOSTICS=1 -I\${includedir}/ringwork
Libs: -L\${libdir} -lringwork ${public[*]}
Libs.private: ${private[*]}
PC

cmake_list() { local IFS=';'; echo "$*"; }
cat > "$out_config" <<CMAKE
# Ringwork's CMake package: find_package(Ringwork REQUIRED), then
#   target_link_libraries(app PRIVATE Ringwork::ringwork)          # libringwork.so
#   target_link_libraries(app PRIVATE Ringwork::ringwork_static)   # libringwork.a
# Both bring C++17, the include directory and the compile definitions the
# headers need. Installed by the Debian package libringwork-dev.
if(TARGET Ringwork::ringwork)
  return()
endif()
get_filename_component(_ringwork_libdir "\${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
get_filename_component(_ringwork_includedir "\${_ringwork_libdir}/../../include/ringwork" ABSOLUTE)
set(_ringwork_public_libraries "$(cmake_list "${public[@]}")")
set(_ringwork_private_libraries "$(cmake_list "${private[@]}")")

add_library(Ringwork::ringwork SHARED IMPORTED)
set_target_properties(Ringwork::ringwork PROPERTIES
  IMPORTED_LOCATION "\${_ringwork_libdir}/libringwork.so.$version"
  IMPORTED_SONAME "libringwork.so.$major"
  INTERFACE_INCLUDE_DIRECTORIES "\${_ringwork_includedir}"
  INTERFACE_COMPILE_DEFINITIONS "JSON_DIAGNOSTICS=1"
  INTERFACE_COMPILE_FEATURES "cxx_std_17"
  INTERFACE_LINK_LIBRARIES "\${_ringwork_public_libraries}")

add_library(Ringwork::ringwork_static STATIC IMPORTED)
set_target_properties(Ringwork::ringwork_static PROPERTIES
  IMPORTED_LOCATION "\${_ringwork_libdir}/libringwork.a"
  IMPORTED_LINK_INTERFACE_LANGUAGES "CXX"
  INTERFACE_INCLUDE_DIRECTORIES "\${_ringwork_includedir}"
  INTERFACE_COMPILE_DEFINITIONS "JSON_DIAGNOSTICS=1"
  INTERFACE_COMPILE_FEATURES "cxx_std_17"
  INTERFACE_LINK_LIBRARIES "\${_ringwork_public_libraries};\${_ringwork_private_libraries}")

unset(_ringwork_libdir)
unset(_ringwork_includedir)
unset(_ringwork_public_libraries)
unset(_ringwork_private_libraries)
CMAKE

cat > "$out_config_version" <<CMAKE
# find_package(Ringwork X.Y.Z): compatible when X is this major version and
# X.Y.Z is not newer than this one ($version); exact when equal.
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION OR
   NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "$major")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
# A 64-bit library: no use to a 32-bit build.
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE
