#!/usr/bin/env bash
# The Debian packages, installed for real: dpkg -i refuses the -dev package
# without the runtime one and names it; both install; apps from examples/,
# copied out of the source tree, build with pkg-config (g++) and with CMake
# (shared and static) against the installed files and train on 2 workers under
# the installed ringwork-launch; find_package's version rules hold; dpkg -r
# leaves nothing behind. Also: the
# runtime package's Depends are what dpkg-shlibdeps says its files need.
#
#   package_test.sh RUNTIME.deb DEV.deb KERAS_APP.cc CUSTOM_LOOP.cc
#
# Runs as root outside Bazel's sandbox (it changes the machine's packages) and
# purges the packages on any exit (a SIGTERM from Bazel's timeout included).
set -uo pipefail
runtime_deb=$(realpath "$1") dev_deb=$(realpath "$2")
keras_app=$(realpath "$3") custom_loop=$(realpath "$4")
work=$(mktemp -d)
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
purge() { dpkg --purge libringwork-dev ringwork > /dev/null 2>&1; }
trap 'purge; rm -rf "$work"' EXIT
trap 'exit 143' TERM INT

for tool in dpkg-shlibdeps g++ pkg-config cmake; do
  command -v "$tool" > /dev/null || { echo "package_test: needs $tool (scripts/setup.sh --suite)" >&2; exit 1; }
done

echo "== the runtime package's Depends are dpkg-shlibdeps' answer"
mkdir -p "$work/shlibdeps/debian"
dpkg-deb -x "$runtime_deb" "$work/shlibdeps/root"
printf 'Source: ringwork\n\nPackage: ringwork\nArchitecture: amd64\n' > "$work/shlibdeps/debian/control"
needed=$(cd "$work/shlibdeps" && dpkg-shlibdeps -O root/usr/lib/x86_64-linux-gnu/libringwork.so.* \
  root/usr/bin/* 2> /dev/null | sed 's/^shlibs:Depends=//' | sed 's/, /\n/g' | sort)
declared=$(dpkg-deb -f "$runtime_deb" Depends | sed 's/, /\n/g' | sort)
[[ -n "$needed" && "$needed" == "$declared" ]] ||
  fail "Depends differ from dpkg-shlibdeps: $(diff <(echo "$declared") <(echo "$needed") | tr '\n' ' ')"

echo "== a stale install is purged first"
purge
echo "== dpkg -i of the -dev package alone names what is missing"
if output=$(dpkg -i "$dev_deb" 2>&1); then
  fail "dpkg -i installed libringwork-dev without ringwork"
fi
grep -q "depends on ringwork (= " <<< "$output" || fail "dpkg did not name the missing ringwork: $output"
purge

echo "== the runtime package alone: the library and the tools, no headers"
dpkg -i "$runtime_deb" || { fail "dpkg -i the runtime package"; exit 1; }
soname=$(readelf -d /usr/lib/x86_64-linux-gnu/libringwork.so.*.*.* | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ "$soname" == "libringwork.so.$(dpkg-deb -f "$runtime_deb" Version | cut -d. -f1,2)" ]] ||
  fail "the library's soname is '$soname'"
[[ "$(ringwork-tfconfig hosts h1,h2 2> /dev/null | wc -l)" == 2 ]] || fail "ringwork-tfconfig hosts h1,h2"
[[ -e /usr/include/ringwork ]] && fail "the runtime package installs headers"

echo "== with the -dev package"
dpkg -i "$dev_deb" || { fail "dpkg -i the -dev package"; exit 1; }
[[ "$(pkg-config --modversion ringwork)" == "$(dpkg-deb -f "$dev_deb" Version)" ]] ||
  fail "pkg-config --modversion ringwork"
[[ "$(ldconfig -p)" == *"$soname "* ]] || fail "$soname is not in the loader's cache"

run_on_two_workers() {  # NAME PROGRAM ARGS...: under the installed launcher
  local name=$1
  shift
  local log="$work/$name.log"
  if ! timeout 90 ringwork-launch --num_workers=2 -- "$@" > "$log" 2>&1; then
    fail "$name on 2 workers:"; cat "$log" >&2; return
  fi
  # The app's own last line (not the runtime's log lines, which carry a level).
  echo "$name: $(grep -E '^\[worker:0\] [a-z_]+: ' "$log" | tail -1)"
}

echo "== g++ with pkg-config, outside the source tree"
mkdir -p "$work/pkgconfig" && cp "$keras_app" "$work/pkgconfig/app.cc"
# The app before the libraries: with --as-needed a library is kept only for
# what comes before it.
if (cd "$work/pkgconfig" && g++ -O2 app.cc $(pkg-config --cflags --libs ringwork) -o app); then
  [[ "$(ldd "$work/pkgconfig/app")" == *"$soname => /lib/x86_64-linux-gnu/$soname "* ||
     "$(ldd "$work/pkgconfig/app")" == *"$soname => /usr/lib/x86_64-linux-gnu/$soname "* ]] ||
    fail "the pkg-config app does not load the installed $soname"
  run_on_two_workers keras_app_pkgconfig "$work/pkgconfig/app" --synthetic
  grep -q 'on 2 worker(s)' "$work/keras_app_pkgconfig.log" || fail "keras_app did not train on 2 workers"
else
  fail "g++ \$(pkg-config --cflags --libs ringwork)"
fi

echo "== CMake: find_package(Ringwork 0.1), Ringwork::ringwork and Ringwork::ringwork_static"
mkdir -p "$work/cmake/src"
cp "$custom_loop" "$work/cmake/src/custom_training_loop.cc"
cp "$keras_app" "$work/cmake/src/keras_app.cc"
cat > "$work/cmake/src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(my_app CXX)
find_package(Ringwork 0.1 REQUIRED)
add_executable(custom_training_loop custom_training_loop.cc)
target_link_libraries(custom_training_loop PRIVATE Ringwork::ringwork)
add_executable(keras_app_static keras_app.cc)
target_link_libraries(keras_app_static PRIVATE Ringwork::ringwork_static)
CMAKE
if cmake -S "$work/cmake/src" -B "$work/cmake/build" -DCMAKE_BUILD_TYPE=Release > "$work/cmake.log" 2>&1 &&
   cmake --build "$work/cmake/build" -j 2 >> "$work/cmake.log" 2>&1; then
  run_on_two_workers custom_training_loop_cmake "$work/cmake/build/custom_training_loop"
  checksums=$(grep -oE '^\[worker:[01]\] custom_training_loop: worker:[01] weights checksum .*' \
    "$work/custom_training_loop_cmake.log" | awk '{print $NF}' | sort -u)
  [[ $(grep -c '^\[worker:[01]\] custom_training_loop: worker:[01] weights checksum' \
        "$work/custom_training_loop_cmake.log") == 2 && $(wc -l <<< "$checksums") == 1 ]] ||
    fail "custom_training_loop's 2 workers do not end with one weights checksum"
  if [[ "$(ldd "$work/cmake/build/keras_app_static")" == *libringwork* ]]; then
    fail "keras_app_static loads libringwork.so"
  fi
  # The static initializers nothing refers to are in (libringwork_static_init.a).
  app_symbols=$(nm "$work/cmake/build/keras_app_static")
  for symbol in $(nm --defined-only /usr/lib/x86_64-linux-gnu/libringwork_static_init.a |
                  awk 'NF == 3 {print $3}'); do
    grep -qF " $symbol" <<< "$app_symbols" || fail "keras_app_static lacks $symbol"
  done
  run_on_two_workers keras_app_static_cmake "$work/cmake/build/keras_app_static" --synthetic
  grep -q 'on 2 worker(s)' "$work/keras_app_static_cmake.log" || fail "keras_app_static did not train on 2 workers"
else
  fail "the CMake build:"; cat "$work/cmake.log" >&2
fi
find_package_accepts() {  # VERSION_ARGUMENTS: does find_package(Ringwork ...) succeed?
  local project="$work/cmake/find_$RANDOM"
  mkdir -p "$project"
  printf 'cmake_minimum_required(VERSION 3.19)\nproject(find CXX)\nfind_package(Ringwork %s REQUIRED)\n' \
    "$1" > "$project/CMakeLists.txt"
  cmake -S "$project" -B "$project/build" > /dev/null 2>&1
}
version=$(dpkg-deb -f "$dev_deb" Version)
IFS=. read -r major minor patch <<< "$version"
for accepted in "" "$major.$minor" "$version EXACT" "$major.$minor...<$major.$((minor + 1))"; do
  find_package_accepts "$accepted" || fail "find_package(Ringwork $accepted) failed"
done
# While 0.x, another minor version is another ABI.
for refused in "$((major + 1)).0" "$major.$((minor + 1))" "$major.$minor.$((patch + 1))" \
               "0.0.1...<$major.$minor"; do
  find_package_accepts "$refused" && fail "find_package(Ringwork $refused) accepted version $version"
done

echo "== dpkg -r leaves nothing behind"
files=$(dpkg -L ringwork libringwork-dev | sort -u)
dpkg -r libringwork-dev ringwork > /dev/null || fail "dpkg -r"
while read -r path; do
  [[ -z "$path" || -d "$path" ]] && continue  # Directories other packages share stay.
  [[ -e "$path" || -L "$path" ]] && fail "left behind: $path"
done <<< "$files"
[[ -e /usr/include/ringwork ]] && fail "left behind: /usr/include/ringwork"
[[ -e /usr/lib/x86_64-linux-gnu/cmake/Ringwork ]] && fail "left behind: the CMake package directory"
pkg-config --exists ringwork 2> /dev/null && fail "pkg-config still finds ringwork"
[[ "$(ldconfig -p)" == *libringwork* ]] && fail "the loader's cache still lists libringwork"
[[ "$(dpkg-query -W -f='${Status}\n' ringwork libringwork-dev 2> /dev/null)" == *installed* ]] &&
  [[ "$(dpkg-query -W -f='${Status}\n' ringwork libringwork-dev 2> /dev/null)" != *not-installed* ]] &&
  fail "dpkg still lists the packages as installed"

if [[ $failures -gt 0 ]]; then
  echo "package_test: $failures failure(s)" >&2
  exit 1
fi
echo "package_test: all checks passed"
