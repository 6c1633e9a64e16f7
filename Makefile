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
VERSION := $(or $(shell git describe --always --dirty 2>/dev/null),unknown)

# The version is baked into the banner and the QR payload: the objects that
# print it are rebuilt when it changes (the file is rewritten only then).
VERSION_FILE := $(BUILD)/version.txt
$(shell mkdir -p $(BUILD); if ! echo '$(VERSION)' | cmp -s - $(VERSION_FILE) 2>/dev/null; then echo '$(VERSION)' > $(VERSION_FILE); fi)

KERNEL := $(BUILD)/clockbench.elf
ISO := $(BUILD)/clockbench.iso
TEST_ISO := $(BUILD)/test/clockbench.iso
HOST_LIB := $(BUILD)/host/libclockbench_host.so

ASM_SRCS := boot/multiboot_header.asm boot/entry.asm boot/exceptions.asm boot/probe_jump.asm boot/trampoline.asm boot/irq.asm

# Pure logic: compiled for the kernel and, unchanged, for the host tests.
LOGIC_SRCS := kernel/format.c kernel/cmdline.c kernel/bootinfo.c kernel/record.c kernel/cpuid_decode.c kernel/acpi.c \
	kernel/xf.c kernel/stats.c kernel/fit.c kernel/qr.c kernel/unwrap.c kernel/segfit.c kernel/uncertainty.c kernel/verdict.c kernel/tsc_sync.c \
	kernel/latency.c kernel/deadline_errata.c kernel/os_choice.c kernel/rtc_fit.c

KERNEL_SRCS := $(LOGIC_SRCS) kernel/main.c kernel/string.c kernel/console.c kernel/finish.c \
	kernel/exceptions.c kernel/probe.c kernel/checks.c kernel/cpuinfo.c kernel/paging.c \
	kernel/tsc.c kernel/counters.c kernel/discover.c kernel/inventory.c \
	kernel/memory.c kernel/percpu.c kernel/profile.c kernel/results.c kernel/reads.c kernel/report_util.c \
	kernel/experiments.c kernel/progress.c kernel/verdict_report.c kernel/summary.c \
	kernel/exp_calibrate.c kernel/exp_cpu_speed.c kernel/exp_hpet_comparator.c kernel/exp_read_cost.c \
	kernel/exp_sequential.c kernel/exp_drift.c kernel/exp_stolen.c kernel/exp_cpus.c kernel/smp.c \
	kernel/exp_timers.c kernel/exp_rtc.c drivers/rtc.c kernel/interrupts.c drivers/ioapic.c drivers/pic.c \
	drivers/uart.c drivers/textgrid.c drivers/vga_text.c drivers/fbcon.c drivers/keyboard.c drivers/hpet.c drivers/pmtimer.c drivers/pit.c drivers/lapic.c

# Freestanding: no host headers but the compiler's own (stdint.h, stdarg.h,
# ...), no libc, no red zone (exceptions arrive on the same stack), and no
# x87/SSE: all arithmetic is integer (see boot/entry.asm for why). The image
# is identity-mapped at 1 MiB, so the small code model fits it; -mcmodel=kernel
# would need the image in the top 2 GiB of the address space.
FREESTANDING := -ffreestanding -fno-builtin -nostdlib -fno-stack-protector -fno-pic -fno-pie \
	-mno-red-zone -mgeneral-regs-only -mcmodel=small -fno-asynchronous-unwind-tables -fno-omit-frame-pointer
WARNINGS := -Wall -Wextra -Werror
KERNEL_CFLAGS := -std=gnu11 -O2 -g $(FREESTANDING) $(WARNINGS) -MMD -MP -DCLOCKBENCH_VERSION='"$(VERSION)"'
ifneq ($(findstring clang,$(shell $(CC) --version 2>/dev/null)),)
KERNEL_CFLAGS += --target=x86_64-unknown-none-elf
endif
LDFLAGS := -n -nostdlib -static -z max-page-size=0x1000 -z noexecstack -T linker.ld
ifneq ($(shell $(LD) --help 2>/dev/null | grep -c no-warn-rwx-segments),0)
LDFLAGS += --no-warn-rwx-segments
endif
NASMFLAGS := -f elf64 -g -I boot/

HOST_CFLAGS := -std=gnu11 -O1 -g -fPIC -shared $(WARNINGS) -fsanitize=undefined -fno-sanitize-recover=all

# The console font: converted at build time from a Debian console font
# (package console-setup-linux), never committed.
FONT_PSF ?= /usr/share/consolefonts/Lat15-VGA16.psf.gz
FONT_C := $(BUILD)/gen/fbcon_font.c

# Quiet builds: one line a step ("  CC      kernel/main.c"); `make V=1`
# prints every command in full.
ifeq ($(V),1)
Q :=
say :=
else
Q := @
say = @printf '  %-7s %s\n' '$(1)' '$(2)';
endif

KERNEL_OBJS := $(ASM_SRCS:%.asm=$(BUILD)/%.o) $(KERNEL_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/gen/fbcon_font.o

.PHONY: os os-bench os-vm all kernel iso usb tool fixtures run run-direct test test-host test-boot test-matrix bench fuzz fuzz-seeds fuzz-harness deps check-build-tools clean help

all: kernel

kernel: $(KERNEL)

help:
	@echo "make            build the kernel ($(KERNEL))"
	@echo "make iso        build the hybrid BIOS+UEFI ISO ($(ISO))"
	@echo "make run        boot the ISO in QEMU, serial on this terminal (KVM if usable, else TCG)"
	@echo "make run-direct boot the kernel with QEMU -kernel (the fast path)"
	@echo "make usb DEV=/dev/sdX  write the ISO to a USB stick (refuses unsafe targets)"
	@echo "make test       host unit tests and QEMU boot tests"
	@echo "make test-matrix every row of the robustness matrix; writes docs/robustness.md"
	@echo "make fuzz       the ACPI parser under libFuzzer for FUZZ_SECONDS (300)"
	@echo "make os         build the OS side, $(BUILD)/os/clockbench-os (a static Linux program)"
	@echo "make os-bench   run it on this machine (as root: every clocksource, the original put back); OS_ARGS='--rt ...'"
	@echo "make os-vm      boot Debian's Linux in the image's QEMU machine with clockbench-os as /init (OS_VM_ARGS='--accel tcg --args=...')"
	@echo "make bench      repeated KVM and TCG runs; figures and goals in $(BUILD)/bench.json"
	@echo "make deps       install the Debian packages clockbench needs"
	@echo "make clean      remove $(BUILD)/"
	@echo "Variables: CROSS=x86_64-elf-  CC=clang  V=1 (full commands)  RUN_ARGS='--firmware uefi --accel tcg ...'"

# A missing tool gets a message naming the Debian package; `make deps`
# (run by `make run` and `make test`) installs them all.
check-build-tools:
	@command -v $(NASM) >/dev/null || { echo "error: $(NASM) not found: install the 'nasm' package (or run 'make deps')"; exit 1; }
	@command -v $(CC) >/dev/null || { echo "error: $(CC) not found: install 'gcc' (or 'clang' for CC=clang, or a $(CROSS)gcc cross toolchain)"; exit 1; }
	@command -v $(LD) >/dev/null || { echo "error: $(LD) not found: install 'binutils' (or a $(CROSS)binutils cross toolchain)"; exit 1; }

deps:
	@scripts/install-deps.sh

$(BUILD)/%.o: %.asm boot/constants.inc Makefile | check-build-tools
	@mkdir -p $(dir $@)
	$(call say,AS,$<)$(NASM) $(NASMFLAGS) -MD $(@:.o=.d) -o $@ $<

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

# The ISO: GRUB for both legacy BIOS (i386-pc) and UEFI (x86_64-efi) in one
# hybrid image that can be written raw to a USB stick. The tests' copy boots
# the default entry with no menu delay.
define make_iso
	@command -v $(GRUB_MKRESCUE) >/dev/null || { echo "error: grub-mkrescue not found: install grub-common grub-pc-bin grub-efi-amd64-bin xorriso mtools (or run 'make deps')"; exit 1; }
	$(call say,ISO,$(1))rm -rf $(dir $(1))isodir
	$(Q)mkdir -p $(dir $(1))isodir/boot/grub
	$(Q)cp $(KERNEL) $(dir $(1))isodir/boot/clockbench.elf
	$(Q)sed -e 's/@TIMEOUT@/$(2)/' -e 's/@VERSION@/$(VERSION)/' iso/grub.cfg > $(dir $(1))isodir/boot/grub/grub.cfg
	$(Q)$(GRUB_MKRESCUE) -o $(1) $(dir $(1))isodir 2>$(dir $(1))grub-mkrescue.log || { cat $(dir $(1))grub-mkrescue.log; exit 1; }
endef

iso: $(ISO)

$(ISO): $(KERNEL) iso/grub.cfg
	$(call make_iso,$@,5)

$(TEST_ISO): $(KERNEL) iso/grub.cfg
	@mkdir -p $(dir $@)
	$(call make_iso,$@,0)

# clockbench-os: the same measurements through Linux (os/), a static
# program so that it runs as a VM's init with nothing beside it. It shares
# the pure logic (records, statistics, fits) and cpuinfo with the image.
OS_BIN := $(BUILD)/os/clockbench-os
OS_SRCS := os/clockbench_os.c os/os_vdso.c os/os_clocksource.c os/os_analysis.c \
	kernel/cpuinfo.c kernel/cpuid_decode.c kernel/record.c kernel/format.c kernel/stats.c kernel/xf.c kernel/segfit.c kernel/uncertainty.c
OS_CFLAGS := -std=gnu11 -O2 -g -static $(WARNINGS) -Wno-format-truncation -DCLOCKBENCH_VERSION='"$(VERSION)"'
$(OS_BIN): $(OS_SRCS) $(wildcard os/*.h) kernel/cpu.h kernel/cpuinfo.h kernel/cpuid_decode.h kernel/record.h kernel/stats.h kernel/xf.h \
		kernel/segfit.h kernel/uncertainty.h $(VERSION_FILE)
	@test -r /usr/lib/x86_64-linux-gnu/libc.a || { echo "error: static glibc not found: install 'libc6-dev' (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,HOSTCC,$@)$(HOSTCC) $(OS_CFLAGS) -o $@ $(OS_SRCS) -lm

os: $(OS_BIN)

# The OS side on the machine you are on: as root every clocksource in turn
# (the original is always put back). OS_ARGS="--rt --cpu 1 ..." (clockbench-os --help).
OS_ARGS ?=
os-bench: deps $(OS_BIN)
	@mkdir -p $(BUILD)/os-bench
	@{ $(OS_BIN) $(OS_ARGS); echo $$? > $(BUILD)/os-bench/status; } | tee $(BUILD)/os-bench/os.log
	@echo "make os-bench: the log is $(BUILD)/os-bench/os.log; compare it with a bare run: $(CLOCKBENCH) compare BARE.log $(BUILD)/os-bench/os.log"
	@exit $$(cat $(BUILD)/os-bench/status)

# Debian's Linux (fetched once into build/linux/) in the image's QEMU machine,
# with clockbench-os as /init (under a PVM KVM, which emulates every
# instruction, --accel auto picks TCG: Linux would not boot in minutes).
OS_VM_ARGS ?=
os-vm: deps $(OS_BIN) $(HOST_TOOL)
	$(CLOCKBENCH) os-vm --program $(OS_BIN) $(OS_VM_ARGS)

# Host build of the pure logic, for the unit tests (ctypes).
# drivers/fbcon.c's drawing is pure too (its rdtsc runs on the host as well).
HOST_EXTRA := drivers/fbcon.c drivers/textgrid.c os/os_analysis.c $(FONT_C)
$(HOST_LIB): $(LOGIC_SRCS) $(HOST_EXTRA) tests/host/shim.c $(wildcard kernel/*.h) $(wildcard drivers/*.h) $(wildcard os/*.h)
	@mkdir -p $(dir $@)
	$(call say,HOSTCC,$@)$(HOSTCC) $(HOST_CFLAGS) -Idrivers -o $@ $(LOGIC_SRCS) $(HOST_EXTRA) tests/host/shim.c

# The ACPI parser under libFuzzer with ASan and UBSan (clang from Debian).
FUZZ_BIN := $(BUILD)/fuzz/fuzz_acpi
FUZZ_SECONDS ?= 300
$(FUZZ_BIN): tests/fuzz/fuzz_acpi.c kernel/acpi.c kernel/format.c kernel/acpi.h kernel/format.h
	@command -v clang >/dev/null || { echo "error: clang not found: install the 'clang' package (or run 'make deps')"; exit 1; }
	@mkdir -p $(dir $@)
	$(call say,FUZZCC,$@)clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $@ tests/fuzz/fuzz_acpi.c kernel/acpi.c kernel/format.c

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
VENV := $(BUILD)/venv
HOST_TOOL := $(VENV)/bin/clockbench
$(HOST_TOOL): tools/pyproject.toml
	$(call say,VENV,$(VENV))$(PYTHON) -m venv --system-site-packages $(VENV)
	$(Q)$(VENV)/bin/pip install -q --no-build-isolation --no-deps -e tools
	@touch $@

tool: deps $(HOST_TOOL)

# Log fixtures for the host tool's tests, from real QEMU runs (TCG and, when usable, KVM).
fixtures: $(KERNEL)
	PYTHONPATH=tools $(PYTHON) -m clockbench run --no-report --boot direct --accel tcg --log tests/fixtures/tcg-q35.log > /dev/null
	PYTHONPATH=tools $(PYTHON) -m clockbench run --no-report --boot direct --accel tcg --machine pc --cpu EPYC --log tests/fixtures/tcg-pc-epyc.log > /dev/null
	-PYTHONPATH=tools $(PYTHON) -m clockbench run --no-report --boot direct --accel kvm --firmware qboot --log tests/fixtures/kvm-q35.log > /dev/null

RUN_ARGS ?=
CLOCKBENCH := $(HOST_TOOL)

run: deps $(ISO) $(HOST_TOOL)
	$(CLOCKBENCH) run --boot iso --iso $(ISO) $(RUN_ARGS)

# Writes the ISO to a USB stick: make usb DEV=/dev/sdX (checks and asks first).
usb: $(ISO) $(HOST_TOOL)
	@test -n "$(DEV)" || { echo "usage: make usb DEV=/dev/sdX (the whole disk of a USB stick)"; exit 2; }
	$(CLOCKBENCH) flash $(DEV) --iso $(ISO) $(FLASH_ARGS)

run-direct: deps $(KERNEL) $(HOST_TOOL)
	$(CLOCKBENCH) run --boot direct --kernel $(KERNEL) $(RUN_ARGS)

bench: deps $(KERNEL)
	PYTHONPATH=tools $(PYTHON) -m clockbench.bench --kernel $(KERNEL) --out $(BUILD)/bench.json

# The suite runs in two phases (tests/conftest.py): first the tests marked
# `timed` (they time something, or stop QEMU from outside), one at a time, so
# that no other QEMU of ours shares the CPU with them; then the rest, on
# TEST_JOBS cores (pytest-xdist). Each QEMU configuration boots once for
# both phases (BOOT_CACHE): a run the timed phase made alone is read again
# by the other tests that ask for it. Each phase lists its 15 slowest tests.
TEST_JOBS ?= 2
BOOT_CACHE := $(BUILD)/test-boots
PYTEST := CLOCKBENCH_BOOT_CACHE=$(BOOT_CACHE) PYTHONPATH=tools $(PYTHON) -m pytest -q --durations=15
# $(1): the folders to test. Status 5 (nothing collected in a phase) is no failure.
define test_phases
	@rm -rf $(BOOT_CACHE)
	@status=0; \
	echo "== timed tests, one at a time"; \
	$(PYTEST) -p no:xdist -m timed $(1) || [ $$? -eq 5 ] || status=1; \
	echo "== the other tests, on $(TEST_JOBS) cores"; \
	$(PYTEST) -n $(TEST_JOBS) -m "not timed" $(1) || [ $$? -eq 5 ] || status=1; \
	rm -rf $(BOOT_CACHE); exit $$status
endef

test: deps $(KERNEL) $(TEST_ISO) $(HOST_LIB) $(HOST_TOOL) $(OS_BIN) fuzz-harness
	$(call test_phases,tests)

# Every row of the robustness matrix (tests/boot/matrix.py); writes docs/robustness.md.
test-matrix: deps $(KERNEL) $(TEST_ISO)
	CLOCKBENCH_MATRIX=all PYTHONPATH=tools $(PYTHON) -m pytest -q tests/boot/test_matrix.py

test-host: $(HOST_LIB)
	$(call test_phases,tests/host)

test-boot: $(KERNEL) $(TEST_ISO) $(OS_BIN)
	$(call test_phases,tests/boot)

clean:
	rm -rf $(BUILD)

$(BUILD)/kernel/main.o $(BUILD)/kernel/summary.o: $(VERSION_FILE)

-include $(KERNEL_OBJS:.o=.d)
