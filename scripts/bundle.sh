#!/usr/bin/env bash
# make bundle: the folder and the tarball people download (issue 43;
# docs/os-side.md, "The bundle"). Written whole or not at all.
#   scripts/bundle.sh DIR VERSION CLOCKBENCH_OS LANG_DIR SOURCE_DATE_EPOCH HOSTLIBC
set -euo pipefail
dir="$1" version="$2" program="$3" lang="$4" epoch="$5" hostlibc="$6"
name="$(basename "$dir")"
out="$(dirname "$dir")"
tarball="$out/$name.tar.gz"
files=(probe-cpp-libstdcxx probe-cpp-libcxx probe-rust probe-go java/Probe.class probe.py probe.js Probe.exe Probe.runtimeconfig.json)
native=(clockbench-os lang/probe-cpp-libstdcxx lang/probe-cpp-libcxx lang/probe-rust lang/probe-go)

rm -rf "$dir" "$tarball" "$tarball.tmp"
mkdir -p "$dir/lang/java"
install -m 0755 "$program" "$dir/clockbench-os"
install -m 0755 "$hostlibc" "$dir/clockbench-os-libc"
for f in "${files[@]}"; do
  [ -f "$lang/$f" ] || { echo "error: $lang/$f is missing: every probe goes into the bundle (make lang; make deps installs the toolchains)" >&2; rm -rf "$dir"; exit 1; }
  mode=0644; [ -x "$lang/$f" ] && mode=0755
  install -m "$mode" "$lang/$f" "$dir/lang/$f"
done
# Static, or the bundle would need the building host's libraries on every host it reaches.
for f in "${native[@]}"; do
  if readelf -lW "$dir/$f" | grep -q 'Requesting program interpreter'; then
    echo "error: $f is not a static program: it would need this host's libraries" >&2; rm -rf "$dir"; exit 1
  fi
done
# The host-libc helper is the one dynamic program, on purpose (it measures the
# host's own C library): it must load on every glibc from 2.17, so it may name
# no symbol version above GLIBC_2.17 (os/hostlibc/glibc_baseline.h).
newer=$(objdump -T "$dir/clockbench-os-libc" | grep -o 'GLIBC_[0-9][0-9.]*' | sort -u -V |
  awk -F'[_.]' '$2 > 2 || ($2 == 2 && $3 > 17)' | paste -sd ' ')
if [ -n "$newer" ]; then
  echo "error: clockbench-os-libc needs $newer: it would not load on an older glibc (os/hostlibc/glibc_baseline.h)" >&2; rm -rf "$dir"; exit 1
fi
install -m 0644 "$(dirname "$0")/../os/bundle/README" "$dir/README"
# BUNDLE: the version (clockbench-os reads its first line, and then keeps
# each run's log in a folder of its own by default) and each file's SHA-256.
{
  echo "clockbench-os $version x86_64-linux"
  (cd "$dir" && find . -type f ! -name BUNDLE | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum)
} > "$dir/BUNDLE"
chmod 0644 "$dir/BUNDLE"
find "$dir" -type d -exec chmod 0755 {} +  # whatever the umask (a rebuild runs under 077)
find "$dir" -exec touch -h -d "@$epoch" {} +
tar -C "$out" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --format=gnu -cf - "$name" | gzip -9n > "$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "  bundle: $tarball ($(du -h "$tarball" | cut -f1)); unpack it anywhere and run $name/clockbench-os"
