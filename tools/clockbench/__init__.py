"""Host-side companion of the clockbench image: boots it in QEMU and reads its output."""
