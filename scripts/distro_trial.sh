#!/usr/bin/env bash
# make test-distros (issue 48, "The runtimes and distributions people run"):
# the bundle run as nobody in a Debian chroot with that release's own
# runtimes, as a host of that release would run it.
#   scripts/distro_trial.sh DIST [BUNDLE.tar.gz]
# DIST: bullseye (Debian 11) or trixie (Debian 13). The root is made once by
# debootstrap (minbase) into BUILD/distros/DIST and kept (750-830 MB each on disk);
# the runtimes are that release's packages, installed by its own apt. /proc,
# /sys and /dev are mounted in it for the run and unmounted on every exit.
# The bundle (default: the newest BUILD/bundle/*.tar.gz, `make bundle`) is
# unpacked into the root's /tmp and run by its own launcher,
# `clockbench-os --current-only --out DIR`, as nobody, within TRIAL_TIMEOUT
# seconds (default 1200). Prints each runtime's version, the run's status and
# each language's lines; exits with the run's status (or 1 when the root
# could not be made). Needs root (debootstrap, mount, chroot) and Debian's
# package mirror.
set -euo pipefail

dist="${1:-}"
case "$dist" in
  bullseye) java=openjdk-11-jre-headless ;;
  trixie) java=openjdk-21-jre-headless ;;
  *) echo "usage: scripts/distro_trial.sh bullseye|trixie [BUNDLE.tar.gz]" >&2; exit 64 ;;
esac
here="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD:-$here/build}"
case "$build" in /*) ;; *) build="$here/$build" ;; esac
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
timeout_s="${TRIAL_TIMEOUT:-1200}"
root="$build/distros/$dist"
packages=("$java" python3 nodejs mono-runtime)

say() { echo "distro_trial $dist: $*"; }
[ "$(id -u)" = 0 ] || { echo "error: distro_trial needs root (debootstrap, mount, chroot)" >&2; exit 1; }

bundle="${2:-}"
if [ -z "$bundle" ]; then
  bundle="$(ls -t "$build"/bundle/*.tar.gz 2>/dev/null | head -n 1 || true)"
  [ -n "$bundle" ] || { echo "error: no bundle in $build/bundle: run 'make bundle' first" >&2; exit 1; }
fi
[ -f "$bundle" ] || { echo "error: $bundle: no such bundle" >&2; exit 1; }

# Mounted below the root for the install and the run; unmounted on every exit,
# the last mounted first, each only if it is still a mount point.
mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    if mountpoint -q "${mounted[i]}"; then
      umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || echo "warning: could not unmount ${mounted[i]}" >&2
    fi
  done
  mounted=()
}
# the run goes on in the background (a signal to this script is taken at once, not after the
# run): on INT or TERM it is stopped, then the EXIT trap unmounts
child=
stop_child() { [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null; child=; }
trap unmount_all EXIT
trap 'stop_child; exit 130' INT
trap 'stop_child; exit 143' TERM
mount_in() {  # mount_in WHERE mount-args...
  local where="$root$1"; shift
  mkdir -p "$where"
  mountpoint -q "$where" && { echo "error: $where is already mounted (another trial running?)" >&2; exit 1; }
  mount "$@" "$where"
  mounted+=("$where")
}
mount_all() {
  mount_in /proc -t proc proc
  mount_in /sys -t sysfs sysfs
  mount_in /dev --bind /dev
  mount_in /dev/pts --bind /dev/pts
}
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# The root, once: debootstrap's minbase, then the runtimes by the release's own
# apt (so that a package name it lacks is its own error, said as such).
ready="$root/.clockbench-runtimes"
if [ ! -f "$ready" ] || [ "$(cat "$ready")" != "${packages[*]}" ]; then
  if [ ! -x "$root/usr/bin/apt-get" ]; then
    command -v debootstrap >/dev/null || { say "installing debootstrap"; apt-get install -y -qq debootstrap >/dev/null; }
    say "debootstrap --variant=minbase $dist into $root (once; kept for later trials)"
    rm -rf "$root" "$root.tmp"
    mkdir -p "$(dirname "$root")"
    if ! debootstrap --variant=minbase "$dist" "$root.tmp" "$mirror" > "$build/distros/$dist.debootstrap.log" 2>&1; then
      echo "error: debootstrap $dist failed; its log: $build/distros/$dist.debootstrap.log (last lines below)" >&2
      tail -n 5 "$build/distros/$dist.debootstrap.log" >&2
      exit 1
    fi
    mv "$root.tmp" "$root"
  fi
  # no service of a package may start in the chroot
  printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
  chmod 0755 "$root/usr/sbin/policy-rc.d"
  mount_all
  say "apt-get install ${packages[*]} (the release's own)"
  if ! { in_root apt-get update -qq && in_root apt-get install -y -qq --no-install-recommends "${packages[@]}"; } \
      > "$build/distros/$dist.apt.log" 2>&1; then
    echo "error: the runtimes could not be installed in $dist; its log: $build/distros/$dist.apt.log (last lines below)" >&2
    tail -n 5 "$build/distros/$dist.apt.log" >&2
    exit 1
  fi
  unmount_all
  echo "${packages[*]}" > "$ready"
fi

mount_all
say "glibc $(in_root /usr/bin/ldd --version | head -n 1 | awk '{print $NF}'); runtimes:"
for p in "${packages[@]}"; do
  echo "  $p $(in_root dpkg-query -W -f='${Version}' "$p" 2>/dev/null || echo 'not installed')"
done
echo "  java: $(in_root java -version 2>&1 | head -n 1)"
echo "  python3: $(in_root python3 --version 2>&1)"
echo "  node: $(in_root node --version 2>&1)"
echo "  mono: $(in_root mono --version 2>&1 | head -n 1)"

# The bundle, fresh each time, in the root's /tmp, run as nobody (65534:65534,
# nobody and nogroup in every Debian) by its own launcher.
trial=/tmp/clockbench-trial
rm -rf "$root$trial"
mkdir -p "$root$trial/out"
tar -C "$root$trial" -xzf "$bundle"
name="$(basename "$bundle" .tar.gz)"
chown 65534:65534 "$root$trial/out"
chmod 0755 "$root$trial"
say "running $name/clockbench-os --current-only as nobody (bounded at $timeout_s s)"
start=$(date +%s)
set +e
timeout --kill-after=30 "$timeout_s" chroot --userspec=65534:65534 "$root" /usr/bin/env -i \
  PATH=/usr/local/bin:/usr/bin:/bin HOME=/nonexistent LANG=C.UTF-8 \
  "$trial/$name/clockbench-os" --current-only --out "$trial/out" > "$root$trial/run.txt" 2>&1 &
child=$!
wait "$child"
status=$?
child=
set -e
took=$(($(date +%s) - start))
cp "$root$trial/run.txt" "$build/distros/$dist.run.txt"
log="$(find "$root$trial/out" -name os.log | head -n 1)"
[ -n "$log" ] && cp "$log" "$build/distros/$dist.os.log"
say "status $status after $took s (the whole output: $build/distros/$dist.run.txt)"
# each language's runtime as the run found it, each API's figure, what failed, and the checks
grep -v '^@cb ' "$root$trial/run.txt" | sed -n -e '/^== Languages/,/^$/p' -e '/^-- languages on clocksource/,/^$/p' \
  -e '/^== Each language/,/^$/p' -e '/^== Checks/,$p' || true
grep -v '^@cb ' "$root$trial/run.txt" | grep -E 'FAILED|hung|killed' | sort -u || true
exit "$status"
