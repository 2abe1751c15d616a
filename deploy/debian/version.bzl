"""Ringwork's version: the packages', the shared library's (soname
libringwork.so.MAJOR) and CMake's find_package(Ringwork VERSION)."""

RINGWORK_VERSION = "0.1.0"
