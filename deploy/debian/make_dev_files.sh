#!/usr/bin/env bash
# Writes what build systems read to use the installed library: ringwork.pc
# (pkg-config) and RingworkConfig.cmake, RingworkConfigVersion.cmake (CMake's
# find_package), for the Debian layout (/usr/include/ringwork,
# /usr/lib/x86_64-linux-gnu). Used by deploy/debian/BUILD.
#
#   make_dev_files.sh VERSION SONAME_VERSION LINK_FLAGS_FILE DEFINES_FILE \
#     OUT_PC OUT_CONFIG OUT_CONFIG_VERSION
#
# An app links libringwork and the libraries whose headers Ringwork's public
# headers include (Abseil, gRPC, protobuf, oneDNN): it calls their inline code.
# The rest (HDF5, PNG, JPEG, libzip, ...) only libringwork calls; they are
# Libs.private, for static links (pkg-config --static, Ringwork::ringwork_static),
# with libringwork_static_init.a taken whole. The compile definitions are the
# ones Ringwork was built with (its JSON types are nlohmann's diagnostic ones).
# No -std: the headers need C++17 or newer, GCC 12's default.
set -euo pipefail
version=$1 soname_version=$2 flags_file=$3 defines_file=$4
out_pc=$5 out_config=$6 out_config_version=$7
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
defines=()
while read -r define; do [[ -n "$define" ]] && defines+=("$define"); done < "$defines_file"
cflags=""
for define in "${defines[@]}"; do cflags+="-D$define "; done
whole_init=(-Wl,--whole-archive -lringwork_static_init -Wl,--no-whole-archive)
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
Cflags: ${cflags}-I\${includedir}/ringwork
Libs: -L\${libdir} -lringwork ${public[*]}
Libs.private: ${whole_init[*]} ${private[*]}
PC

cmake_list() { local IFS=';'; echo "$*"; }
cat > "$out_config" <<CMAKE
# Ringwork's CMake package: find_package(Ringwork REQUIRED), then
#   target_link_libraries(app PRIVATE Ringwork::ringwork)          # libringwork.so
#   target_link_libraries(app PRIVATE Ringwork::ringwork_static)   # libringwork.a
# Both bring C++17, the include directory and the compile definitions the
# headers need. Installed by the Debian package libringwork-dev, in /usr.
if(TARGET Ringwork::ringwork)
  return()
endif()
set(_ringwork_libdir "/usr/lib/x86_64-linux-gnu")
set(_ringwork_includedir "/usr/include/ringwork")
set(_ringwork_defines "$(cmake_list "${defines[@]}")")
set(_ringwork_public_libraries "$(cmake_list "${public[@]}")")
set(_ringwork_private_libraries "$(cmake_list "${private[@]}")")

add_library(Ringwork::ringwork SHARED IMPORTED)
set_target_properties(Ringwork::ringwork PROPERTIES
  IMPORTED_LOCATION "\${_ringwork_libdir}/libringwork.so.$version"
  IMPORTED_SONAME "libringwork.so.$soname_version"
  INTERFACE_INCLUDE_DIRECTORIES "\${_ringwork_includedir}"
  INTERFACE_COMPILE_DEFINITIONS "\${_ringwork_defines}"
  INTERFACE_COMPILE_FEATURES "cxx_std_17"
  INTERFACE_LINK_LIBRARIES "\${_ringwork_public_libraries}")

# The static initializers nothing refers to come whole from their own archive.
add_library(Ringwork::ringwork_static STATIC IMPORTED)
set_target_properties(Ringwork::ringwork_static PROPERTIES
  IMPORTED_LOCATION "\${_ringwork_libdir}/libringwork.a"
  IMPORTED_LINK_INTERFACE_LANGUAGES "CXX"
  INTERFACE_INCLUDE_DIRECTORIES "\${_ringwork_includedir}"
  INTERFACE_COMPILE_DEFINITIONS "\${_ringwork_defines}"
  INTERFACE_COMPILE_FEATURES "cxx_std_17"
  INTERFACE_LINK_LIBRARIES "-Wl,--whole-archive;\${_ringwork_libdir}/libringwork_static_init.a;-Wl,--no-whole-archive;\${_ringwork_public_libraries};\${_ringwork_private_libraries}")

unset(_ringwork_libdir)
unset(_ringwork_includedir)
unset(_ringwork_defines)
unset(_ringwork_public_libraries)
unset(_ringwork_private_libraries)
CMAKE

if [[ "$major" == 0 ]]; then
  same="PACKAGE_FIND_VERSION_MAJOR STREQUAL \"0\" AND PACKAGE_FIND_VERSION_MINOR STREQUAL \"$minor\""
  rule="0.$minor.x: while the version is 0.x, only the same minor version"
else
  same="PACKAGE_FIND_VERSION_MAJOR STREQUAL \"$major\""
  rule="$major.x: the same major version"
fi
cat > "$out_config_version" <<CMAKE
# find_package(Ringwork X.Y.Z): compatible when X.Y.Z is not newer than this
# version ($version) and asks for $rule;
# exact when equal. find_package(Ringwork MIN...MAX) (CMake 3.19): compatible
# when this version is in the range.
set(PACKAGE_VERSION "$version")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(PACKAGE_FIND_VERSION_RANGE)
  if(NOT PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MIN AND
     ((PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE" AND
       NOT PACKAGE_VERSION VERSION_GREATER PACKAGE_FIND_VERSION_MAX) OR
      (PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "EXCLUDE" AND
       PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)))
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
  endif()
elseif(NOT PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION AND $same)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION VERSION_EQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
# A 64-bit library: no use to a 32-bit build.
if(NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
CMAKE
