"""Running machines: QEMU (TCG or KVM, BIOS, UEFI, qboot, PVH, netboot),
Cloud Hypervisor and Firecracker behind one entry (launch.run) and one
start-and-poll loop (vmrun.Session), their stops (pause, migration,
snapshot and restore, each a second process the session takes over to), the
screen read back, os-vm's initramfs with the languages' runtimes, and os-vm's guests
reached over ssh (guest.py). A machine is given its command
line and returns what it printed and how it ended; it knows nothing of
reports or the store.

May import: clockbench.errors, clockbench.paths, clockbench.records, and this package."""
