# clockbench: one Makefile, explicit source lists, everything built into build/.
# `make` builds the kernel; `make run` boots the ISO in QEMU; `make test` runs
# every test. `make help` lists the targets.

CROSS ?=
ifeq ($(origin CC),default)
CC := $(CROSS)gcc
endif
LD := $(CROSS)ld
NASM ?= nasm
HOSTCC ?= gcc
PYTHON ?= /usr/bin/python3
GRUB_MKRESCUE ?= grub-mkrescue

BUILD := build
# scripts/version.sh: the tag, else the commit; the one version every output names
VERSION := $(or $(shell scripts/version.sh),unknown)

# Reproducible builds (docs/architecture.md, "Reproducible builds"): every
# tool that stamps a time (mtools, xorriso, the Authenticode signature) takes
# it from SOURCE_DATE_EPOCH, the commit's date unless the environment gives
# one; without git (a `git archive` tarball), the Makefile's modification
# time, which git archive sets to the commit's. The build folder is mapped
# to "." in debug information and __FILE__.
ifeq ($(origin SOURCE_DATE_EPOCH),undefined)
SOURCE_DATE_EPOCH := $(or $(shell git log -1 --format=%ct 2>/dev/null),$(shell stat -c %Y Makefile))
endif
ifeq ($(shell echo '$(SOURCE_DATE_EPOCH)' | grep -xE '[0-9]{1,11}'),)
$(error SOURCE_DATE_EPOCH='$(SOURCE_DATE_EPOCH)' is not a time in seconds since 1970 (unset it: the commit's date is taken))
endif
export SOURCE_DATE_EPOCH
PREFIX_MAP := -ffile-prefix-map=$(CURDIR)=.

# The version is baked into the banner and the QR payload: the objects that
# print it are rebuilt when it changes (the file is rewritten only then).
VERSION_FILE := $(BUILD)/version.txt
$(shell mkdir -p $(BUILD); if ! echo '$(VERSION)' | cmp -s - $(VERSION_FILE) 2>/dev/null; then echo '$(VERSION)' > $(VERSION_FILE); fi)

KERNEL := $(BUILD)/clockbench.elf
# The same kernel without the Multiboot 1 header, so that QEMU's -kernel takes
# its PVH entry (Firecracker and Cloud Hypervisor take the PVH note of either).
PVH_KERNEL := $(BUILD)/clockbench-pvh.elf
ISO := $(BUILD)/clockbench.iso
TEST_ISO := $(BUILD)/test/clockbench.iso
# The raw USB disk image (tools/clockbench/release/usbimage.py) and the tests' copy
IMG := $(BUILD)/clockbench.img
TEST_IMG := $(BUILD)/test/clockbench.img
HOST_LIB := $(BUILD)/host/libclockbench_host.so

ASM_SRCS := boot/multiboot_header.asm boot/pvh.asm boot/entry.asm boot/exceptions.asm boot/probe_jump.asm boot/trampoline.asm boot/irq.asm

# The layers, each using only those below it (docs/architecture.md; a host
# test reads the #include lines and keeps it so):
#   lib/          pure logic, compiled unchanged into the image, clockbench-os
#                 and the host test library
#   drivers/      one device per file (the CPU's instructions among them)
#   kernel/       the runtime: console, exceptions, probes, memory, CPUs,
#                 discovery of the counters, the results store, checks
#   experiments/  one file per experiment, their table, the verdict, the
#                 summary screen and kmain
LOGIC_SRCS := lib/steal.c lib/format.c lib/cmdline.c lib/bootinfo.c lib/record.c lib/cpuid_decode.c lib/acpi.c lib/acpi_record.c lib/aml.c \
	lib/timer_analysis.c lib/timer_deadline.c \
	lib/cpus_analysis.c lib/drift_analysis.c lib/cpu_topology.c \
	lib/xf.c lib/stats.c lib/fit.c lib/qr.c lib/unwrap.c lib/segfit.c lib/uncertainty.c lib/verdict.c lib/tsc_sync.c \
	lib/latency.c lib/deadline_errata.c lib/os_choice.c lib/rtc_fit.c lib/counters.c lib/vmm_rates.c

DRIVER_SRCS := drivers/cpuinfo.c drivers/uart.c drivers/textgrid.c drivers/vga_text.c drivers/fbcon.c drivers/keyboard.c \
	drivers/hpet.c drivers/pmtimer.c drivers/pit.c drivers/lapic.c drivers/ioapic.c drivers/pic.c drivers/rtc.c

RUNTIME_SRCS := kernel/console.c kernel/finish.c kernel/trap.c kernel/exceptions.c kernel/probe.c \
	kernel/checks.c kernel/paging.c kernel/tsc.c kernel/discover.c kernel/inventory.c kernel/memory.c \
	kernel/percpu.c kernel/profile.c kernel/results.c kernel/reads.c kernel/report_util.c kernel/progress.c \
	kernel/smp.c kernel/interrupts.c

EXPERIMENT_SRCS := experiments/main.c experiments/experiments.c experiments/verdict_report.c experiments/summary.c \
	experiments/exp_timers_setup.c experiments/exp_timers_report.c \
	experiments/exp_cpus_report.c experiments/exp_rtc_report.c experiments/exp_drift_report.c \
	experiments/exp_calibrate.c experiments/exp_cpu_speed.c experiments/exp_hpet_comparator.c experiments/exp_read_cost.c \
	experiments/exp_sequential.c experiments/exp_drift.c experiments/exp_stolen.c experiments/exp_cpus.c \
	experiments/exp_timers.c experiments/exp_rtc.c

# The freestanding string functions: on the host, libc's stand in.
LIB_IMAGE_SRCS := lib/string.c

KERNEL_SRCS := $(LOGIC_SRCS) $(LIB_IMAGE_SRCS) $(DRIVER_SRCS) $(RUNTIME_SRCS) $(EXPERIMENT_SRCS)

# Freestanding: no host headers but the compiler's own (stdint.h, stdarg.h,
# ...), no libc, no red zone (exceptions arrive on the same stack), and no
# x87/SSE: all arithmetic is integer (see boot/entry.asm for why). The image
# is identity-mapped at 1 MiB, so the small code model fits it; -mcmodel=kernel
# would need the image in the top 2 GiB of the address space.
FREESTANDING := -ffreestanding -fno-builtin -nostdlib -fno-stack-protector -fno-pic -fno-pie \
	-mno-red-zone -mgeneral-regs-only -mcmodel=small -fno-asynchronous-unwind-tables -fno-omit-frame-pointer
WARNINGS := -Wall -Wextra -Werror
KERNEL_CFLAGS := -std=gnu11 -O2 -g $(PREFIX_MAP) $(FREESTANDING) $(WARNINGS) -MMD -MP -DCLOCKBENCH_VERSION='"$(VERSION)"'
ifneq ($(findstring clang,$(shell $(CC) --version 2>/dev/null)),)
KERNEL_CFLAGS += --target=x86_64-unknown-none-elf
endif
LDFLAGS := -n -nostdlib -static -z max-page-size=0x1000 -z noexecstack -T linker.ld
ifneq ($(shell $(LD) --help 2>/dev/null | grep -c no-warn-rwx-segments),0)
LDFLAGS += --no-warn-rwx-segments
endif
NASMFLAGS := -f elf64 -g -I boot/
# NASM (2.16) writes the source's absolute folder as the DWARF compilation
# folder and cannot map it away: the script sets it to "." (the folder the
# source names are relative to), as -ffile-prefix-map does for GCC's objects.
NASM_COMP_DIR = $(PYTHON) scripts/dwarf_comp_dir.py $@ || { rm -f $@; exit 1; }

HOST_CFLAGS := -std=gnu11 -O1 -g -fPIC -shared $(WARNINGS) -fsanitize=undefined -fno-sanitize-recover=all

# The console font: converted at build time from a Debian console font
# (package console-setup-linux), never committed.
FONT_PSF ?= /usr/share/consolefonts/Lat15-VGA16.psf.gz
FONT_C := $(BUILD)/gen/fbcon_font.c

# Quiet builds: one line a step ("  CC      experiments/main.c"); `make V=1`
# prints every command in full.
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-7s %s\n' '$(1)' '$(2)';
endif

KERNEL_OBJS := $(ASM_SRCS:%.asm=$(BUILD)/%.o) $(KERNEL_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/fbcon_font.o

NETBOOT_CONFIG ?= netboot/machines.toml

.PHONY: test-distros bundle release rebuild-check img efi netboot test-fleet os os-bench os-vm lang all kernel iso usb tool fixtures run run-direct test test-host test-boot test-matrix bench fuzz fuzz-seeds fuzz-harness deps check-build-tools clean help

all: kernel

kernel: $(KERNEL) $(PVH_KERNEL)

help:
	@echo "make            build the kernel ($(KERNEL)); the same as make all"
	@echo "make kernel     build both kernels: $(KERNEL) (Multiboot 1 and 2, PVH) and $(PVH_KERNEL) (PVH only, for QEMU -kernel)"
	@echo "make iso        build the hybrid BIOS+UEFI ISO ($(ISO)), signed for Secure Boot with the key in KEY_DIR ($(KEY_DIR); made at the first build)"
	@echo "make img        build the raw USB disk image ($(IMG)): GRUB for BIOS in the MBR, the ISO's signed UEFI chain on a FAT partition"
	@echo "make efi        build the kernel as an unsigned EFI program ($(EFI))"
	@echo "make run        boot the ISO in QEMU, serial on this terminal (KVM if usable, else TCG); installs the run set only (DEPS=run)"
	@echo "make run-direct boot the kernel with QEMU -kernel (the fast path); installs the run set only (DEPS=run)"
	@echo "make run RUN_ARGS='--boot netboot' boot the netboot tree ($(BUILD)/netboot, written when missing) in QEMU"
	@echo "make run RUN_ARGS='--vmm firecracker' (or cloud-hypervisor): the PVH kernel under a microVM monitor, from PATH or VMM_DIR ($(VMM_DIR))"
	@echo "make usb DEV=/dev/sdX  write the ISO to a USB stick (refuses unsafe targets); IMAGE=$(IMG): the disk image"
	@echo "make netboot    a TFTP tree in $(BUILD)/netboot: BIOS (iPXE, GRUB) and UEFI (GRUB) PXE; NETBOOT_CONFIG=$(NETBOOT_CONFIG)"
	@echo "make test-fleet 8 QEMU machines netbooted at once, captured (some through labgrid), flagged by clockbench fleet"
	@echo "make test       host unit tests and QEMU boot tests (installs everything: make deps)"
	@echo "make test-host  the host tests only (tests/host)"
	@echo "make test-boot  the QEMU boot tests only (tests/boot)"
	@echo "make test-matrix every row of the robustness matrix; writes docs/robustness.md"
	@echo "make test-distros the bundle as nobody in Debian 11 and 13 chroots with their own runtimes (as root; downloads about 1 GB once, kept in $(BUILD)/distros)"
	@echo "make fuzz       the ACPI parser under libFuzzer for FUZZ_SECONDS (300)"
	@echo "make fuzz-harness build the fuzzer ($(FUZZ_BIN)); make fuzz-seeds writes its seeds from real boots (tests/fuzz/seeds)"
	@echo "make tool       the host tool in a virtual environment ($(HOST_TOOL)) and its host library"
	@echo "make fixtures   rewrite the log fixtures in tests/fixtures/ from real QEMU runs (TCG, and KVM when usable)"
	@echo "make check-build-tools  say which of the kernel's build tools (nasm, the compiler, the linker) is missing"
	@echo "make os         build the OS side, $(BUILD)/os/clockbench-os (a static Linux program) and its host-libc helper beside it"
	@echo "make bundle     $(BUILD)/bundle/clockbench-os-VERSION-x86_64-linux.tar.gz: clockbench-os and every language's probe, to run on any Linux host as any user"
	@echo "make os-bench   run it on this machine: its current clocksource, changes nothing (OS_ARGS=--all-clocksources: the lab mode, as root every clocksource, the machine's switched, the original put back); OS_ARGS='--lang go,python'; installs only what builds it (DEPS=os); RECORDS=1 shows the @cb records"
	@echo "make lang       build the language clock probes into $(LANG_DIR) (C++, Rust, Go, Java, Python, Node.js, .NET); make -k lang: every one whose toolchain is here"
	@echo "make os-vm      boot Debian's Linux in the image's QEMU machine with clockbench-os and the languages' probes and runtimes in it (OS_VM_ARGS='--accel tcg --lang go,python --args=...', or --no-lang); installs only what it needs (DEPS=osvm)"
	@echo "make bench      repeated KVM and TCG runs, and each language's clock under its own benchmark harness beside clockbench-os's; figures and goals in $(BUILD)/bench.json (installs DEPS=bench: all and the harnesses)"
	@echo "make deps       install the Debian packages clockbench needs (DEPS=run: only to build and run, as a CI job; DEPS=os: only clockbench-os; DEPS=osvm: os-vm's set; DEPS=bench: all and the benchmark harnesses)"
	@echo "make release KEY_DIR=DIR  $(RELEASE_DIR)/: ISO, USB image, ELFs, netboot tarball, SBOM, notes, SHA256SUMS, signed with the release key in DIR (VERSION=, ALLOW_DIRTY=1, UNLISTED_CERT=1)"
	@echo "make rebuild-check RELEASE=DIR  rebuild a downloaded release bit for bit at its commit (its own signatures reattached) and compare every file"
	@echo "make clean      remove $(BUILD)/"
	@echo "make help       this list"
	@echo "Variables: CROSS=x86_64-elf-  CC=clang  V=1 (full commands)  RUN_ARGS='--firmware uefi --accel tcg ...'"

# A missing tool gets a message naming the Debian package; `make deps`
# (run by `make test`; `make run` runs `make deps DEPS=run`) installs them.
check-build-tools:
	@command -v $(NASM) >/dev/null || { echo "error: $(NASM) not found: install the 'nasm' package (or run 'make deps')"; exit 1; }
	@command -v $(CC) >/dev/null || { echo "error: $(CC) not found: install 'gcc' (or 'clang' for CC=clang, or a $(CROSS)gcc cross toolchain)"; exit 1; }
	@command -v $(LD) >/dev/null || { echo "error: $(LD) not found: install 'binutils' (or a $(CROSS)binutils cross toolchain)"; exit 1; }

# `make deps DEPS=run`: only what building the image and running it need
# (a CI job: docs/ci.md); the default, all, adds the tests' tools.
DEPS ?= all
deps:
	@scripts/install-deps.sh $(DEPS)

$(BUILD)/%.o: %.asm boot/constants.inc scripts/dwarf_comp_dir.py Makefile | check-build-tools
	@mkdir -p $(dir $@)
	$(call say,AS,$<)$(NASM) $(NASMFLAGS) -MD $(@:.o=.d) -o $@ $<
	$(Q)$(NASM_COMP_DIR)

$(BUILD)/%.o: %.c Makefile | check-build-tools
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(KERNEL_CFLAGS) -c -o $@ $<

$(FONT_C): scripts/psf_to_c.py
	@test -r $(FONT_PSF) || { echo "error: $(FONT_PSF) not found: install the 'console-setup-linux' package (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)$(PYTHON) scripts/psf_to_c.py $(FONT_PSF) $@

$(BUILD)/gen/fbcon_font.o: $(FONT_C) drivers/fbcon_font.h
	$(call say,CC,$<)$(CC) $(KERNEL_CFLAGS) -Idrivers -c -o $@ $<

$(KERNEL): $(KERNEL_OBJS) linker.ld
	$(call say,LD,$@)$(LD) $(LDFLAGS) -o $@ $(KERNEL_OBJS)

PVH_OBJS := $(filter-out $(BUILD)/boot/multiboot_header.o,$(KERNEL_OBJS)) $(BUILD)/boot/multiboot_header_nomb1.o
$(BUILD)/boot/multiboot_header_nomb1.o: boot/multiboot_header.asm boot/constants.inc scripts/dwarf_comp_dir.py Makefile | check-build-tools
	@mkdir -p $(dir $@)
	$(call say,AS,$< (no Multiboot 1))$(NASM) $(NASMFLAGS) -DNO_MULTIBOOT1 -MD $(@:.o=.d) -o $@ $<
	$(Q)$(NASM_COMP_DIR)

$(PVH_KERNEL): $(PVH_OBJS) linker.ld
	$(call say,LD,$@)$(LD) $(LDFLAGS) -o $@ $(PVH_OBJS)

# The kernel as an EFI program (docs/architecture.md, "Two entries"): a
# position-independent stub (efi/) carrying the kernel's flat image as its
# payload, made a PE32+ by objcopy. The stub must need no relocation: a link
# with any is refused. build/clockbench.efi is unsigned; the stick's copy is
# signed (below).
EFI := $(BUILD)/clockbench.efi
EFI_CFLAGS := -std=gnu11 -O2 $(PREFIX_MAP) -ffreestanding -fno-builtin -nostdlib -fno-stack-protector -fpic -fvisibility=hidden \
	-mno-red-zone -mgeneral-regs-only -fno-asynchronous-unwind-tables $(WARNINGS) -MMD -MP -I$(BUILD)/gen
ifneq ($(findstring clang,$(shell $(CC) --version 2>/dev/null)),)
EFI_CFLAGS += --target=x86_64-unknown-none-elf
endif
OBJCOPY ?= objcopy

$(BUILD)/gen/kernel_layout.h: $(KERNEL)
	@mkdir -p $(dir $@)
	$(call say,GEN,$@)nm $(KERNEL) | awk 'BEGIN { print "/* generated from $(KERNEL) by the Makefile */" } \
		$$3 == "image_start" { print "#define KERNEL_IMAGE_START 0x" $$1 "ull" } \
		$$3 == "image_load_end" { print "#define KERNEL_LOAD_END 0x" $$1 "ull" } \
		$$3 == "image_bss_end" { print "#define KERNEL_BSS_END 0x" $$1 "ull" } \
		$$3 == "start64" { print "#define KERNEL_START64 0x" $$1 "ull" }' > $@
	@test $$(grep -c define $@) -eq 4 || { echo "error: $(KERNEL) lacks image_start, image_load_end, image_bss_end or start64"; rm -f $@; exit 1; }

$(BUILD)/efi/clockbench.bin: $(KERNEL)
	@mkdir -p $(dir $@)
	$(call say,OBJCOPY,$@)$(OBJCOPY) -O binary -j .text -j .rodata -j .data $< $@

$(BUILD)/efi/sbat.csv: efi/sbat.csv.in $(VERSION_FILE)
	@mkdir -p $(dir $@)
	$(Q)sed -e 's/@VERSION@/$(VERSION)/' $< > $@

$(BUILD)/efi/stub.o: efi/stub.c $(BUILD)/gen/kernel_layout.h Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(EFI_CFLAGS) -c -o $@ $<

# the image's own freestanding string functions: the compiler may call
# memset and memcpy for struct copies and zeroing
$(BUILD)/efi/string.o: lib/string.c lib/string.h Makefile
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(EFI_CFLAGS) -c -o $@ $<

$(BUILD)/efi/payload.o: efi/payload.S $(BUILD)/efi/clockbench.bin $(BUILD)/efi/sbat.csv
	$(call say,AS,$<)$(CC) $(PREFIX_MAP) -c -Wa,-I$(BUILD)/efi -o $@ $<

$(BUILD)/efi/stub.so: $(BUILD)/efi/stub.o $(BUILD)/efi/string.o $(BUILD)/efi/payload.o efi/stub.lds
	$(call say,LD,$@)$(LD) -shared -Bsymbolic -nostdlib -z noexecstack -T efi/stub.lds -o $@ $(BUILD)/efi/stub.o $(BUILD)/efi/string.o $(BUILD)/efi/payload.o
	@if readelf -rW $@ | grep -q 'R_X86_64'; then echo "error: the EFI entry needs relocations (an absolute address in efi/stub.c):"; readelf -rW $@; rm -f $@; exit 1; fi

$(EFI): $(BUILD)/efi/stub.so
	$(call say,EFI,$@)$(OBJCOPY) --strip-all -j .text -j .rodata -j .data -j .sbat -j .payload -j .reloc \
		--target=efi-app-x86_64 --subsystem=10 $< $@

efi: $(EFI)

# The stick's GRUB for UEFI: shim starts it, so it is signed and carries
# SBAT (grub,5: shim 16.1's level); every module the menu uses is built in
# (under Secure Boot GRUB loads no module from disk). efi/grub-early.cfg
# (no comments: GRUB's built-in config takes none) finds iso/grub.cfg on
# the stick's ISO 9660 tree (or the disk image's FAT) by /boot/clockbench.elf:
# a PC's own disk often holds a /boot/grub/grub.cfg, found first when it
# comes first (tests/boot/test_usbimage.py boots one ahead of the image).
GRUB_MKIMAGE ?= grub-mkimage
GRUB_EFI_MODULES := normal configfile search search_fs_file fat iso9660 part_gpt part_msdos chain boot echo test \
	regexp smbios serial terminal all_video efi_gop multiboot2 sleep ls cat reboot halt
GRUB_EFI := $(BUILD)/efi/grubx64.efi
$(GRUB_EFI): efi/grub-sbat.csv efi/grub-early.cfg Makefile
	@command -v $(GRUB_MKIMAGE) >/dev/null || { echo "error: grub-mkimage not found: install grub-common grub-efi-amd64-bin (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,GRUB,$@)$(GRUB_MKIMAGE) -O x86_64-efi -o $@ -p /boot/grub --sbat efi/grub-sbat.csv -c efi/grub-early.cfg $(GRUB_EFI_MODULES)

# The signing key (tools/clockbench/release/secureboot.py): the user's, made at the
# first build that needs it, outside the repository; the tests' copy of the
# ISO is signed with a key made in build/ (never the user's).
KEY_DIR ?= $(HOME)/.config/clockbench/secureboot
TEST_KEY_DIR := $(BUILD)/test-key
CB_TOOL := PYTHONPATH=tools $(PYTHON) -m clockbench
# The installed host tool: defined here, before the first rule that names it
# as a prerequisite (os-vm), for make expands prerequisites as it reads them.
VENV := $(BUILD)/venv
HOST_TOOL := $(VENV)/bin/clockbench

# The certificate stands for its key: made when there is none, and an ISO
# older than it (a new key, `clockbench keys --new`) is signed again.
$(KEY_DIR)/clockbench.crt $(TEST_KEY_DIR)/clockbench.crt:
	$(call say,KEY,$(dir $@))$(CB_TOOL) keys --ensure --quiet --dir $(dir $@)

# The ISO: GRUB for legacy BIOS (i386-pc, Multiboot 2) and, for UEFI, an EFI
# system partition of our own in the same hybrid image (writable raw to a
# USB stick): shim as BOOTX64.EFI, MokManager, the signed GRUB and the
# signed kernel.efi, and the certificate (DER) for MokManager. grub-mkrescue
# builds its own /efi.img (an unsigned GRUB) in a folder it grafts first;
# ours, at the same path in the folder given, is grafted after it and
# replaces it (the El Torito UEFI entry and the GPT partition both point at
# /efi.img; tests/boot/test_secureboot.py checks the ISO's copy is ours).
# The tests' copy boots the default entry with no menu delay.
# Reproducible: GRUB 2.06's grub-mkrescue dates the ISO, and names it by a
# UUID made of that date which its core images search for, from time() (it
# reads no SOURCE_DATE_EPOCH), so it runs under faketime with the clock
# stopped at SOURCE_DATE_EPOCH; xorriso (1.5.4) takes that date for the
# volume and its file dates from SOURCE_DATE_EPOCH, and every file's own date
# is set to it (-alter_date_r); -r makes the permissions umask-free.
ISO_DATE = $(shell TZ=UTC date -d @$(SOURCE_DATE_EPOCH) '+%Y-%m-%d %H:%M:%S')
# $(call make_iso,ISO,TIMEOUT,KEY_DIR)
define make_iso
	@command -v $(GRUB_MKRESCUE) >/dev/null || { echo "error: grub-mkrescue not found: install grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools (or run 'make deps')"; exit 1; }
	@command -v faketime >/dev/null || { echo "error: faketime not found: install the 'faketime' package (or run 'make deps'): it dates the ISO from SOURCE_DATE_EPOCH"; exit 1; }
	$(call say,ISO,$(1))rm -rf $(dir $(1))isodir $(dir $(1))esp
	$(Q)mkdir -p $(dir $(1))isodir/boot/grub $(dir $(1))esp
	$(Q)cp $(KERNEL) $(dir $(1))isodir/boot/clockbench.elf
	$(Q)sed -e 's/@TIMEOUT@/$(2)/' -e 's/@VERSION@/$(VERSION)/' iso/grub.cfg > $(dir $(1))isodir/boot/grub/grub.cfg
	$(Q)$(CB_TOOL) keys --ensure --quiet --dir $(3)
	$(Q)$(CB_TOOL) sign --key-dir $(3) $(EFI) -o $(dir $(1))esp/clockbench.efi > /dev/null
	$(Q)$(CB_TOOL) sign --key-dir $(3) $(GRUB_EFI) -o $(dir $(1))esp/grubx64.efi > /dev/null
	$(Q)$(CB_TOOL) esp --out $(dir $(1))esp/efi.img --grub $(dir $(1))esp/grubx64.efi --kernel $(dir $(1))esp/clockbench.efi --cert-der $(3)/clockbench.cer
	$(Q)cp $(dir $(1))esp/efi.img $(dir $(1))isodir/efi.img
	$(Q)TZ=UTC NO_FAKE_STAT=1 faketime -f '$(ISO_DATE)' $(GRUB_MKRESCUE) -o $(1) $(dir $(1))isodir \
		-- -alter_date_r b =$(SOURCE_DATE_EPOCH) / -- 2>$(dir $(1))grub-mkrescue.log || { cat $(dir $(1))grub-mkrescue.log; exit 1; }
endef

iso: $(ISO)

$(ISO): $(KERNEL) $(EFI) $(GRUB_EFI) iso/grub.cfg $(KEY_DIR)/clockbench.crt
	$(call make_iso,$@,5,$(KEY_DIR))

$(TEST_ISO): $(KERNEL) $(EFI) $(GRUB_EFI) iso/grub.cfg $(TEST_KEY_DIR)/clockbench.crt
	@mkdir -p $(dir $@)
	$(call make_iso,$@,0,$(TEST_KEY_DIR))

# The raw USB disk image: the ISO's signed GRUB and kernel, signed here in
# $(dir IMG)img/ (the ISO's own esp/ folder is remade by each ISO build),
# and the menu; usbimage.py writes the MBR, core.img and the FAT partition.
# $(call make_img,IMG,TIMEOUT,KEY_DIR)
define make_img
	$(call say,IMG,$(1))rm -rf $(dir $(1))img
	$(Q)mkdir -p $(dir $(1))img
	$(Q)sed -e 's/@TIMEOUT@/$(2)/' -e 's/@VERSION@/$(VERSION)/' iso/grub.cfg > $(dir $(1))img/grub.cfg
	$(Q)$(CB_TOOL) keys --ensure --quiet --dir $(3)
	$(Q)$(CB_TOOL) sign --key-dir $(3) $(EFI) -o $(dir $(1))img/clockbench.efi > /dev/null
	$(Q)$(CB_TOOL) sign --key-dir $(3) $(GRUB_EFI) -o $(dir $(1))img/grubx64.efi > /dev/null
	$(Q)$(CB_TOOL) usbimg --out $(1) --elf $(KERNEL) --grub $(dir $(1))img/grubx64.efi --kernel $(dir $(1))img/clockbench.efi \
		--cert-der $(3)/clockbench.cer --grub-cfg $(dir $(1))img/grub.cfg
endef

img: $(IMG)

$(IMG): $(KERNEL) $(EFI) $(GRUB_EFI) iso/grub.cfg tools/clockbench/release/usbimage.py $(KEY_DIR)/clockbench.crt
	$(call make_img,$@,5,$(KEY_DIR))

$(TEST_IMG): $(KERNEL) $(EFI) $(GRUB_EFI) iso/grub.cfg tools/clockbench/release/usbimage.py $(TEST_KEY_DIR)/clockbench.crt
	@mkdir -p $(dir $@)
	$(call make_img,$@,0,$(TEST_KEY_DIR))

# clockbench-os: the same measurements through Linux (os/), a static
# program so that it runs as a VM's init with nothing beside it. It shares
# the pure logic (records, statistics, fits) and cpuinfo with the image.
OS_BIN := $(BUILD)/os/clockbench-os
OS_SRCS := os/clockbench_os.c os/os_calls.c os/os_hostlibc.c os/os_vdso.c os/os_clocksource.c os/os_analysis.c os/os_lang.c os/os_lang_parse.c os/os_rounds.c os/os_probe_run.c os/os_keep.c \
	drivers/cpuinfo.c lib/cpuid_decode.c lib/record.c lib/format.c lib/stats.c lib/xf.c lib/segfit.c lib/uncertainty.c
OS_CFLAGS := -std=gnu11 -O2 -g $(PREFIX_MAP) -static $(WARNINGS) -Wno-format-truncation -DCLOCKBENCH_VERSION='"$(VERSION)"'
$(OS_BIN): $(OS_SRCS) $(wildcard os/*.h) drivers/cpu.h drivers/cpuinfo.h $(wildcard lib/*.h) $(VERSION_FILE)
	@test -r /usr/lib/x86_64-linux-gnu/libc.a || { echo "error: static glibc not found: install 'libc6-dev' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,HOSTCC,$@)$(HOSTCC) $(OS_CFLAGS) -o $@ $(OS_SRCS) -lm

# Its helper for the host's own C library (os/hostlibc/; docs/os-side.md, "The
# host's own C library"), beside it: dynamically linked, so that its calls go
# through the host's libc.so.6 as a host program's do, and bound to an old
# symbol baseline (glibc_baseline.h, forced into each object), so that it loads
# on every glibc from 2.17. -nostartfiles: glibc 2.34's crt1.o would name
# __libc_start_main@GLIBC_2.34; hostlibc.c has its own _start. No libm:
# -fno-math-errno keeps sqrt an instruction. Reproducible as clockbench-os is
# (-ffile-prefix-map; the build id is a hash of the contents).
HOSTLIBC_BIN := $(BUILD)/os/clockbench-os-libc
HOSTLIBC_SRCS := os/hostlibc/hostlibc.c os/os_calls.c lib/stats.c lib/xf.c
HOSTLIBC_CFLAGS := -std=gnu11 -O2 -g $(PREFIX_MAP) $(WARNINGS) -fno-math-errno -include os/hostlibc/glibc_baseline.h -nostartfiles
$(HOSTLIBC_BIN): $(HOSTLIBC_SRCS) os/hostlibc/glibc_baseline.h os/os_calls.h drivers/cpu.h lib/stats.h lib/xf.h
	@mkdir -p $(dir $@)
	$(call say,HOSTCC,$@)$(HOSTCC) $(HOSTLIBC_CFLAGS) -o $@ $(HOSTLIBC_SRCS)

os: $(OS_BIN) $(HOSTLIBC_BIN)

# The OS side on the machine you are on: its current clocksource, nothing on
# it changed, as root too; OS_ARGS=--all-clocksources is the lab mode (as root
# every clocksource in turn, the machine's switched meanwhile, the original
# always put back), passed only when asked. OS_ARGS="--rt --cpu 1 ..." (clockbench-os --help).
# It installs only what builds clockbench-os (`make deps DEPS=os`, unless DEPS
# is given), and shows the report without its @cb records, as `run` does:
# the log keeps them all; RECORDS=1 shows them here too. Each run is kept in
# a folder of its own, build/os-runs/<host>-<UTC time>/os.log (never one over
# another; build/os-bench/os.log links to the newest), and added to the store
# of runs (OS_STORE: CLOCKBENCH_STORE, else build/clockbench.db) under the host's
# name, by the host tool's package with this Python (no venv needed).
OS_ARGS ?=
RECORDS ?=
OS_RUNS = $(BUILD)/os-runs
OS_VM_RUNS = $(BUILD)/os-vm-runs
OS_STORE ?= $(or $(CLOCKBENCH_STORE),$(BUILD)/clockbench.db)
os-bench: DEPS = os
os-bench: deps $(OS_BIN) $(HOSTLIBC_BIN)
	@# bad options: clockbench-os's one line and its 64, before any run folder is made
	@# (it reads its options in order, so --help after them exits 0 only when all are good)
	@$(OS_BIN) $(OS_ARGS) --help > /dev/null
	@# the languages' probes: one whose toolchain is missing is said, and not measured
	@$(MAKE) --no-print-directory -k lang || { echo "note: some language probes could not be built (above); their languages are not measured"; [ "$$CI" != true ]; }
	@mkdir -p $(OS_RUNS) $(BUILD)/os-bench; d=$(OS_RUNS)/$$(hostname)-$$(date -u +%Y-%m-%dT%H-%M-%SZ); \
	mkdir "$$d" 2>/dev/null || d=$$(mktemp -d "$$d-XXXXXX"); \
	{ $(OS_BIN) $(OS_ARGS); echo $$? > "$$d/status"; } | tee "$$d/os.log" | \
		{ if [ "$(RECORDS)" = 1 ]; then cat; else grep -v '^@cb ' || true; fi; }; \
	ln -sfn "../os-runs/$${d##*/}/os.log" $(BUILD)/os-bench/os.log; \
	echo "make os-bench: the run is kept in $$d/os.log (with its records; RECORDS=1 shows them here; $(BUILD)/os-bench/os.log is the newest)"; \
	if command -v $(PYTHON) > /dev/null; then PYTHONPATH=tools $(PYTHON) -m clockbench import --store "$(OS_STORE)" "$$d"; \
	else echo "make os-bench: not stored: no $(PYTHON) here (later, where the host tool is: clockbench import $$d)"; fi; \
	echo "make os-bench: $(CLOCKBENCH) runs lists it by id; compare it with a bare run of the image on this machine (make run keeps one): $(CLOCKBENCH) compare ID $$d/os.log"; \
	exit $$(cat "$$d/status")

# The language clock probes (issue 36) that clockbench-os runs: each .mk in
# os/lang/ adds its programs to LANG_PROBES (native.mk: C++, Rust, Go;
# managed.mk: Java, Python, Node.js, .NET), each rule naming the package of a
# missing toolchain, so that `make -k lang` builds all the others.
LANG_DIR := $(BUILD)/lang
LANG_PROBES :=
include $(wildcard os/lang/*.mk)
lang: $(LANG_PROBES)

# The bundle people download (issue 43; docs/os-side.md, "The bundle"):
# clockbench-os and every language's probe, built here, in one folder that
# runs from anywhere, as any user, with no compiler, apt or network. The
# native probes are static; Java, Python, JavaScript and .NET run on the
# host's own runtimes. Every probe is needed (`make lang`, not -k): a
# bundle without a language would leave it out on every host it reaches.
# The tarball is reproducible: sorted, owned by 0, dated SOURCE_DATE_EPOCH.
# (the version as a file name: a ';' or ':' in a rule's target would end its
# line, and `make release VERSION='1.0;rm'` must reach the check that refuses it)
BUNDLE_EMPTY :=
BUNDLE_SPACE := $(BUNDLE_EMPTY) $(BUNDLE_EMPTY)
BUNDLE_HASH := \#
BUNDLE_VERSION := $(subst $(BUNDLE_SPACE),_,$(subst ;,_,$(subst :,_,$(subst =,_,$(subst %,_,$(subst $(BUNDLE_HASH),_,$(VERSION)))))))
BUNDLE_NAME := clockbench-os-$(BUNDLE_VERSION)-x86_64-linux
BUNDLE_DIR := $(BUILD)/bundle/$(BUNDLE_NAME)
BUNDLE := $(BUILD)/bundle/$(BUNDLE_NAME).tar.gz
BUNDLE_LANG := $(LANG_DIR)/probe-cpp-libstdcxx $(LANG_DIR)/probe-cpp-libcxx $(LANG_DIR)/probe-rust $(LANG_DIR)/probe-go \
	$(LANG_DIR)/java/Probe.class $(LANG_DIR)/probe.py $(LANG_DIR)/probe.js $(LANG_DIR)/Probe.exe $(LANG_DIR)/Probe.runtimeconfig.json
$(BUNDLE): $(OS_BIN) $(HOSTLIBC_BIN) $(BUNDLE_LANG) os/bundle/README scripts/bundle.sh
	$(call say,BUNDLE,$@)scripts/bundle.sh '$(BUNDLE_DIR)' '$(VERSION)' $(OS_BIN) $(LANG_DIR) $(SOURCE_DATE_EPOCH) $(HOSTLIBC_BIN)

bundle: $(BUNDLE)

# Debian's Linux (fetched once into build/linux/) in the image's QEMU machine,
# with clockbench-os as /init (under a PVM KVM, which emulates every
# instruction, --accel auto picks TCG: Linux would not boot in minutes).
# Each run is kept in build/os-vm-runs/<host>-os-vm-<UTC time>/os.log (build/os-vm.log
# links to the newest) and stored as machine <host>/os-vm, as os-bench's are.
OS_VM_ARGS ?=
os-vm: DEPS = osvm
os-vm: deps $(OS_BIN) $(HOST_TOOL)
	@# the languages' probes go into the VM with their runtimes (OS_VM_ARGS=--no-lang leaves them out)
	@$(MAKE) --no-print-directory -k lang || { echo "note: some language probes could not be built (above); their languages are not measured"; [ "$$CI" != true ]; }
	@mkdir -p $(OS_VM_RUNS); d=$(OS_VM_RUNS)/$$(hostname)-os-vm-$$(date -u +%Y-%m-%dT%H-%M-%SZ); \
	mkdir "$$d" 2>/dev/null || d=$$(mktemp -d "$$d-XXXXXX"); \
	echo "$(CLOCKBENCH) os-vm --program $(OS_BIN) --lang-dir $(LANG_DIR) --log $$d/os.log $(OS_VM_ARGS)"; \
	$(CLOCKBENCH) os-vm --program $(OS_BIN) --lang-dir $(LANG_DIR) --log "$$d/os.log" $(OS_VM_ARGS); s=$$?; \
	if [ -s "$$d/os.log" ]; then ln -sfn "os-vm-runs/$${d##*/}/os.log" $(BUILD)/os-vm.log; \
		echo "make os-vm: the run is kept in $$d/os.log ($(BUILD)/os-vm.log is the newest)"; \
		$(CLOCKBENCH) import --store "$(OS_STORE)" --machine "$$(hostname)/os-vm" "$$d"; \
	else rm -rf "$$d"; fi; exit $$s

# Host build of the pure logic, for the unit tests (ctypes).
# drivers/fbcon.c's drawing is pure too (its rdtsc runs on the host as well).
# The host tool's own entry points (tools/native/: `clockbench acpi`, the host's TSC mark) beside
# the tests' (tests/host/shim.c): one library, two owners.
HOST_EXTRA := drivers/fbcon.c drivers/textgrid.c os/os_analysis.c os/os_lang_parse.c os/os_rounds.c $(FONT_C)
TOOL_NATIVE := tools/native/acpi_view.c tools/native/host_tsc.c
$(HOST_LIB): $(LOGIC_SRCS) $(HOST_EXTRA) $(TOOL_NATIVE) tests/host/shim.c $(wildcard lib/*.h) $(wildcard drivers/*.h) $(wildcard os/*.h)
	@mkdir -p $(dir $@)
	$(call say,HOSTCC,$@)$(HOSTCC) $(HOST_CFLAGS) -Idrivers -o $@ $(LOGIC_SRCS) $(HOST_EXTRA) $(TOOL_NATIVE) tests/host/shim.c

# The ACPI parser under libFuzzer with ASan and UBSan (clang from Debian).
FUZZ_BIN := $(BUILD)/fuzz/fuzz_acpi
FUZZ_SECONDS ?= 300
$(FUZZ_BIN): tests/fuzz/fuzz_acpi.c lib/acpi.c lib/aml.c lib/format.c lib/acpi.h lib/aml.h lib/format.h
	@command -v clang >/dev/null || { echo "error: clang not found: install the 'clang' package (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,FUZZCC,$@)clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ tests/fuzz/fuzz_acpi.c lib/acpi.c lib/aml.c lib/format.c

# Under CI (CI=true) a harness that cannot be built stops the run here;
# elsewhere the test suite's fuzz smoke fails, saying why.
fuzz-harness:
	@$(MAKE) --no-print-directory $(FUZZ_BIN) || { echo "note: the fuzz harness could not be built; its smoke test will fail"; [ "$$CI" != true ]; }

fuzz: deps $(FUZZ_BIN)
	@mkdir -p $(BUILD)/fuzz/corpus
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=65536 $(BUILD)/fuzz/corpus tests/fuzz/seeds

fuzz-seeds: $(KERNEL) $(TEST_ISO)
	PYTHONPATH=tools $(PYTHON) tests/fuzz/make_seeds.py

# The host tool (tools/, pyproject.toml), installed into a virtual
# environment that sees Debian's pyserial and matplotlib: no download.
# (VENV and HOST_TOOL are set above, before os-vm names it as a prerequisite.)
$(HOST_TOOL): tools/pyproject.toml
	$(call say,VENV,$(VENV))$(PYTHON) -m venv --system-site-packages $(VENV)
	$(Q)$(VENV)/bin/pip install -q --no-build-isolation --no-deps -e tools
	@touch $@

tool: deps $(HOST_TOOL) $(HOST_LIB)

# Log fixtures for the host tool's tests, from real QEMU runs (TCG and, when usable, KVM).
fixtures: $(KERNEL)
	PYTHONPATH=tools $(PYTHON) -m clockbench run --no-report --boot direct --accel tcg --log tests/fixtures/tcg-q35.log > /dev/null
	PYTHONPATH=tools $(PYTHON) -m clockbench run --no-report --boot direct --accel tcg --log tests/fixtures/tcg-q35-emulator.log > /dev/null
	PYTHONPATH=tools $(PYTHON) -m clockbench run --no-report --boot direct --accel tcg --machine pc --cpu EPYC --log tests/fixtures/tcg-pc-epyc.log > /dev/null
	-PYTHONPATH=tools $(PYTHON) -m clockbench run --no-report --boot direct --accel kvm --firmware qboot --log tests/fixtures/kvm-q35.log > /dev/null

RUN_ARGS ?=
CLOCKBENCH := $(HOST_TOOL)
# Cloud Hypervisor and Firecracker (`RUN_ARGS="--vmm firecracker"`): the ones
# on PATH, else those in VMM_DIR when it exists (../shared/vmm on our machines,
# ../../shared/vmm from a worktree beside the main checkout).
VMM_DIR ?= $(firstword $(wildcard ../shared/vmm ../../shared/vmm) ../shared/vmm)
VMM_PATH := $(if $(wildcard $(VMM_DIR)/cloud-hypervisor $(VMM_DIR)/firecracker),PATH="$$PATH:$(abspath $(VMM_DIR))" )

# The ISO under QEMU by default; --boot direct|pvh or --vmm in RUN_ARGS pick
# the kernel the tool boots (build/clockbench.elf or build/clockbench-pvh.elf).
# Both install only the run set (`make deps DEPS=run`, unless DEPS is given);
# `make test` installs everything. --iso is not passed to a netboot, whose
# tree holds the kernel.
run run-direct: DEPS = run
run: deps $(ISO) $(PVH_KERNEL) $(HOST_TOOL) $(HOST_LIB)
	$(VMM_PATH)$(CLOCKBENCH) run $(if $(findstring netboot,$(RUN_ARGS)),,--iso $(ISO) )$(RUN_ARGS)

# Writes the ISO to a USB stick: make usb DEV=/dev/sdX (checks and asks
# first); IMAGE=$(IMG) writes the raw disk image instead.
IMAGE ?= $(ISO)
usb: $(IMAGE) $(HOST_TOOL)
	@test -n "$(DEV)" || { echo "usage: make usb DEV=/dev/sdX [IMAGE=$(IMG)] (the whole disk of a USB stick)"; exit 2; }
	$(CLOCKBENCH) flash $(DEV) --image $(IMAGE) $(FLASH_ARGS)

run-direct: deps $(KERNEL) $(HOST_TOOL) $(HOST_LIB)
	$(CLOCKBENCH) run --boot direct --kernel $(KERNEL) $(RUN_ARGS)

# `make bench` installs the `all` set and the languages' own benchmark harnesses
# (scripts/install-deps.sh bench: bench/harness/, set beside clockbench-os in bench.json)
bench: DEPS = bench
bench: deps $(KERNEL) $(OS_BIN) $(HOSTLIBC_BIN)
	@$(MAKE) --no-print-directory -k lang || { echo "note: some language probes could not be built (above); their languages are not measured"; [ "$$CI" != true ]; }
	PYTHONPATH=tools $(PYTHON) -m clockbench.cli.bench --kernel $(KERNEL) --out $(BUILD)/bench.json

# The suite runs in two lanes at once (scripts/test_lanes.sh): the tests
# marked `timed` (they time something, or stop QEMU from outside), one at a
# time at normal priority, so that no QEMU of theirs waits for another of
# ours; beside them the rest, in TEST_JOBS pytest-xdist workers at the
# lowest priority, taking only the CPU the timed ones leave. Each QEMU
# configuration boots once per lane (BOOT_CACHE): a run the timed lane made
# is read again by the other tests that ask for it. Each lane lists its 15
# slowest tests.
# 3 workers on the 2 cores: while the timed lane's QEMU is stopped or waits, and a busy test
# waits on a server or a sleep, a third takes up the idle CPU (make test here, idle host:
# busy lane 825 s with 2, 736 s with 3 and the fleet's guests merged; the timed lane 677, 642 s)
TEST_JOBS ?= 3
BOOT_CACHE := $(BUILD)/test-boots
PYTEST := CLOCKBENCH_BOOT_CACHE=$(BOOT_CACHE) CLOCKBENCH_STORE=$(BUILD)/test/clockbench.db PYTHONPATH=tools $(PYTHON) -m pytest -q --durations=15
# $(1): the folders to test.
define test_phases
	@rm -rf $(BOOT_CACHE)
	@PYTEST="$(PYTEST)" TEST_JOBS=$(TEST_JOBS) BUILD=$(BUILD) scripts/test_lanes.sh $(1); \
	status=$$?; rm -rf $(BOOT_CACHE); exit $$status
endef

test: deps $(KERNEL) $(PVH_KERNEL) $(TEST_ISO) $(TEST_IMG) $(HOST_LIB) $(HOST_TOOL) $(OS_BIN) $(HOSTLIBC_BIN) fuzz-harness
	@$(MAKE) --no-print-directory -k lang || { echo "note: some language probes could not be built (above); their tests say why"; [ "$$CI" != true ]; }
	@# the bundle, made once here: the tests that unpack it never run make themselves (two at once would rewrite it under each other)
	@$(MAKE) --no-print-directory bundle || { echo "note: the bundle could not be built (above); its tests fail"; [ "$$CI" != true ]; }
	$(call test_phases,tests)

# The tree's Secure Boot way (efi/: shim, GRUB and the kernel signed with KEY_DIR) beside the others
netboot: $(KERNEL) $(EFI) $(KEY_DIR)/clockbench.crt
	PYTHONPATH=tools $(PYTHON) -m clockbench netboot --config $(NETBOOT_CONFIG) --kernel $(KERNEL) --out $(BUILD)/netboot \
		--efi $(EFI) --key-dir $(KEY_DIR)

test-fleet: deps $(KERNEL)
	CLOCKBENCH_FLEET=1 CLOCKBENCH_STORE=$(BUILD)/test/clockbench.db PYTHONPATH=tools $(PYTHON) -m pytest -q tests/fleet/test_fleet_boot.py

# Every row of the robustness matrix (tests/boot/matrix.py); writes docs/robustness.md.
test-matrix: deps $(KERNEL) $(PVH_KERNEL) $(TEST_ISO)
	CLOCKBENCH_MATRIX=all PYTHONPATH=tools $(PYTHON) -m pytest -q tests/boot/test_matrix.py

# The bundle as nobody in a debootstrap chroot of Debian 11 and of Debian 13, each with that
# release's own Java, Python, Node.js and Mono (issue 48; docs/os-side.md, "Runtimes and
# distributions"). Not part of `make test`: the roots download about 1 GB, once (BUILD/distros).
# Both are run; the target fails when either run does.
test-distros: bundle
	@s=0; for d in bullseye trixie; do BUILD=$(BUILD) scripts/distro_trial.sh $$d $(BUNDLE) || s=1; done; exit $$s

test-host: $(HOST_LIB)
	$(call test_phases,tests/host)

test-boot: $(KERNEL) $(PVH_KERNEL) $(TEST_ISO) $(TEST_IMG) $(OS_BIN) $(HOSTLIBC_BIN)
	$(call test_phases,tests/boot)

# The files a person downloads (tools/clockbench/release/release.py; docs/real-hardware.md,
# "Checking a downloaded image"): `make release KEY_DIR=<the release key's folder>`.
# Refused before anything is built: a VERSION that is not one, a dirty tree
# (ALLOW_DIRTY=1 allows it; the version then says dirty), no KEY_DIR given, a
# key that cannot sign, a certificate release-certificate.sha256 does not list
# (also while it lists none; UNLISTED_CERT=1 accepts it, and says so). Then a build from nothing in its own folder, signed
# with that key, and build/release/ written whole or not at all.
RELEASE_DIR := $(BUILD)/release
RELEASE_WORK := $(BUILD)/release-work
RELEASE_VENV ?= $(CURDIR)/build/release-venv
RELEASE_TOOL = PYTHONPATH=tools $(RELEASE_VENV)/bin/python -m clockbench.release.release
RELEASE_TARGETS := kernel iso img netboot bundle
# the commit as make read it: assemble refuses a release whose HEAD moved during the build
RELEASE_COMMIT := $(shell git rev-parse HEAD 2>/dev/null)
# UNLISTED_CERT=1: accept a release certificate release-certificate.sha256 does not list (said in the output)
UNLISTED_FLAG = $(if $(filter 1,$(UNLISTED_CERT)),--accept-unlisted-certificate)
RELEASE_FLAGS = --version '$(VERSION)' --key-dir '$(KEY_DIR)' --commit '$(RELEASE_COMMIT)' $(if $(filter 1,$(ALLOW_DIRTY)),--allow-dirty)
release:
	@RELEASE_VENV=$(RELEASE_VENV) scripts/install-deps.sh release
	@$(RELEASE_TOOL) check $(RELEASE_FLAGS) --key-dir-origin '$(origin KEY_DIR)' --source-date-epoch '$(SOURCE_DATE_EPOCH)' $(UNLISTED_FLAG)
	$(call say,RELEASE,$(VERSION): a build from nothing in $(RELEASE_WORK))rm -rf $(RELEASE_WORK)
	$(Q)$(MAKE) --no-print-directory BUILD=$(RELEASE_WORK) KEY_DIR='$(KEY_DIR)' VERSION='$(VERSION)' $(RELEASE_TARGETS)
	@$(RELEASE_TOOL) assemble $(RELEASE_FLAGS) --work $(RELEASE_WORK) --out $(RELEASE_DIR)

# A downloaded release rebuilt bit for bit, without its key (tools/clockbench/release/rebuild.py):
# `git checkout` its commit, then `make rebuild-check RELEASE=DIR`. Each EFI program
# gets the release's own signature back; every file is then compared.
REBUILD_KEY := $(BUILD)/rebuild-key
# the same folder as the release build's: its name is in the debug information
REBUILD_WORK := $(RELEASE_WORK)
REBUILD_TOOL = PYTHONPATH=tools $(RELEASE_VENV)/bin/python -m clockbench.release.rebuild
rebuild-check:
	@test -n "$(RELEASE)" || { echo "usage: make rebuild-check RELEASE=DIR (a downloaded release's folder; this checkout at its commit)"; exit 64; }
	@RELEASE_VENV=$(RELEASE_VENV) scripts/install-deps.sh release
	@v=$$($(REBUILD_TOOL) prepare --release '$(RELEASE)' --key-dir $(REBUILD_KEY) $(UNLISTED_FLAG)) || exit $$?; \
	echo "  REBUILD $$v: a build from nothing in $(REBUILD_WORK), with the release's signatures"; \
	rm -rf $(REBUILD_WORK) && \
	CLOCKBENCH_SIGNATURES_FROM='$(abspath $(RELEASE))' $(MAKE) --no-print-directory BUILD=$(REBUILD_WORK) \
		KEY_DIR='$(abspath $(REBUILD_KEY))' VERSION="$$v" $(RELEASE_TARGETS) && \
	$(RELEASE_TOOL) assemble --quiet --version "$$v" --key-dir $(REBUILD_KEY) --commit '$(RELEASE_COMMIT)' --work $(REBUILD_WORK) --out $(BUILD)/rebuild && \
	$(REBUILD_TOOL) compare $(BUILD)/rebuild '$(RELEASE)'

clean:
	rm -rf $(BUILD)

$(BUILD)/experiments/main.o $(BUILD)/experiments/summary.o: $(VERSION_FILE)

-include $(KERNEL_OBJS:.o=.d) $(BUILD)/efi/stub.d
