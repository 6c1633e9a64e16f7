#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages clockbench needs to build, boot and
# test the image. Does nothing when they are all present. Uses apt-get as
# root, through sudo otherwise; on a system without apt it names what to get.
set -euo pipefail

packages=(
  make gcc binutils nasm                                # the kernel
  console-setup-linux                                    # the console font, converted at build time
  grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools  # the hybrid ISO
  qemu-system-x86 ovmf                                   # booting it (SeaBIOS, qboot and OVMF firmware)
  python3 python3-pytest python3-numpy python3-hypothesis  # the runner and the tests
  python3-pytest-xdist                                   # the tests on every core (make test)
  python3-venv python3-serial python3-matplotlib         # the host tool (tools/): venv, capture, plots
  python3-rich                                           # the host tool's progress bar (clockbench run)
  python3-jinja2 python3-scipy python3-pip               # the HTML report: templates; allantools' needs; pip for it
  chromium                                               # the HTML report's test renders it in a real browser
  zbar-tools                                             # decoding the QR code (tests, clockbench decode)
  libc6-dev util-linux cpio                              # clockbench-os: linked static; setpriv (its non-root test); cpio (checks os-vm's initramfs)
  clang libclang-rt-14-dev                               # the fuzzer (libFuzzer, ASan, UBSan)
)

# Python packages Debian does not carry, pinned, into build/pydeps (the host
# tool adds that folder to its path, so the venv and the tests find them):
# allantools, for the report's Allan deviation. Its own needs (numpy, scipy,
# matplotlib) come from Debian above, hence --no-deps.
pip_packages=(allantools==2024.6)
pydeps="$(cd "$(dirname "$0")/.." && pwd)/build/pydeps"
install_pip() {
  local need=() spec
  for spec in "${pip_packages[@]}"; do
    [ -d "$pydeps/${spec%%==*}-${spec##*==}.dist-info" ] || need+=("$spec")
  done
  ((${#need[@]})) || return 0
  echo "clockbench: installing Python packages into $pydeps: ${need[*]}"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check --no-deps --upgrade \
    --target "$pydeps" "${need[@]}" || {
    echo "clockbench: pip could not install ${need[*]} (offline?); the report's Allan deviation needs it" >&2
    exit 1
  }
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for tool in make gcc ld nasm grub-mkrescue xorriso mformat qemu-system-x86_64 python3; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  if ((${#missing[@]})); then
    echo "clockbench: this system has no apt/dpkg; install the equivalents of: ${packages[*]}" >&2
    echo "clockbench: missing commands: ${missing[*]}" >&2
    exit 1
  fi
  install_pip
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || { install_pip; exit 0; }

echo "clockbench: installing Debian packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "clockbench: not root and no sudo: as root, run: apt-get install ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_pip
