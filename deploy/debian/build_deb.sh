#!/usr/bin/env bash
# Stages files into a package tree and builds a Debian package with dpkg-deb.
# Used by package.bzl; no fakeroot needed (--root-owner-group).
#
#   build_deb.sh OUT.deb CONTROL [ENTRY...]
#     file SRC DEST MODE    install SRC as DEST (objects lose their debug info)
#     tree DIR DEST         install DIR's files under DEST, 0644, directories 0755
#     link TARGET DEST      a symbolic link DEST -> TARGET
#     debian NAME FILE      the package's DEBIAN/NAME (triggers, shlibs)
set -euo pipefail
out=$1 control=$2
shift 2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root="$stage/root"
install -d -m 0755 "$root/DEBIAN"

# ELF objects and ar archives of them.
is_object() {
  case "$(head -c 4 "$1")" in
    $'\x7fELF' | '!<ar') return 0 ;;
    *) return 1 ;;
  esac
}

while [[ $# -gt 0 ]]; do
  kind=$1
  case "$kind" in
    file)
      src=$2 dest=$3 mode=$4
      shift 4
      install -D -m "$mode" "$src" "$root$dest"
      if is_object "$root$dest"; then strip --strip-debug "$root$dest"; fi ;;
    tree)
      src=$2 dest=$3
      shift 3
      (cd "$src" && find -L . -type f) | while read -r file; do
        install -D -m 0644 "$src/$file" "$root$dest/${file#./}"
      done ;;
    link)
      target=$2 dest=$3
      shift 3
      install -d -m 0755 "$(dirname "$root$dest")"
      ln -s "$target" "$root$dest" ;;
    debian)
      install -m 0644 "$3" "$root/DEBIAN/$2"
      shift 3 ;;
    *) echo "build_deb: unknown entry kind '$kind'" >&2; exit 2 ;;
  esac
done
find "$root" -type d -exec chmod 0755 {} +
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z |
   xargs -0 -r md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums"
installed_kib=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
{ cat "$control"; echo "Installed-Size: $installed_kib"; } > "$root/DEBIAN/control"
chmod 0644 "$root/DEBIAN/control"
dpkg-deb --root-owner-group -Zxz --build "$root" "$out" > /dev/null
