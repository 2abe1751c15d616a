"""Ringwork's version: the packages', the shared library's and CMake's
find_package(Ringwork VERSION).

While the version is 0.x there is no ABI promise between minor versions: the
soname carries the minor version (libringwork.so.0.1), and CMake accepts only
the same minor version. From 1.0 on, the soname is libringwork.so.MAJOR.
"""

RINGWORK_VERSION = "0.1.0"

def _soname_version(version):
    parts = version.split(".")
    return parts[0] if parts[0] != "0" else parts[0] + "." + parts[1]

RINGWORK_SONAME_VERSION = _soname_version(RINGWORK_VERSION)

def _shlibs(version):
    parts = version.split(".")
    depends = "ringwork (>= %s)" % version
    if parts[0] == "0":
        depends += ", ringwork (<< 0.%d~)" % (int(parts[1]) + 1)
    return "libringwork %s %s" % (_soname_version(version), depends)

# The runtime package's DEBIAN/shlibs: what an app linked against libringwork
# depends on (dpkg-shlibdeps reads it when the app is packaged).
RINGWORK_SHLIBS = _shlibs(RINGWORK_VERSION)
