"""Making and shipping images: the release and its rebuild check, the
reproducible-build checks, the USB disk image, Secure Boot signing and
checking (its QEMU check runs through clockbench.machines), and flashing a
USB stick.

May import: clockbench.errors, clockbench.paths, clockbench.records, clockbench.machines,
and this package."""
