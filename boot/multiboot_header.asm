; Multiboot 1 and Multiboot 2 headers, both in the first 8 KiB of the image
; (the PVH entry's ELF note is boot/pvh.asm's).
; GRUB's multiboot2 command uses the second; QEMU's -kernel uses the first
; (QEMU direct boot knows only Multiboot 1 and, for ELF, only ELF32: the
; a.out-kludge address fields let it load this ELF64 file as a flat image).
%include "constants.inc"

extern image_start, image_load_end, image_bss_end
extern start32

section .multiboot
align 8
mb2_header:
    dd MB2_MAGIC
    dd MB2_ARCH_I386
    dd mb2_header_end - mb2_header
    dd -(MB2_MAGIC + MB2_ARCH_I386 + (mb2_header_end - mb2_header))
    ; framebuffer tag, optional: a linear framebuffer (UEFI GOP or VBE) for
    ; the screen console, preferably 1024x768x32; GRUB may give text instead.
    align 8
    dw MB2_TAG_FRAMEBUFFER
    dw MB2_TAG_OPTIONAL
    dd 20
    dd 1024
    dd 768
    dd 32
    ; end tag
    align 8
    dw MB2_TAG_END
    dw 0
    dd 8
mb2_header_end:

; Left out of build/clockbench-pvh.elf (NO_MULTIBOOT1): QEMU's -kernel takes
; Multiboot 1 whenever it finds this header, and the PVH note only without it.
%ifndef NO_MULTIBOOT1
align 4
mb1_header:
    dd MB1_MAGIC
    dd MB1_FLAG_MEMINFO | MB1_FLAG_AOUT_KLUDGE
    dd -(MB1_MAGIC + (MB1_FLAG_MEMINFO | MB1_FLAG_AOUT_KLUDGE))
    dd mb1_header       ; header_addr
    dd image_start      ; load_addr
    dd image_load_end   ; load_end_addr
    dd image_bss_end    ; bss_end_addr
    dd start32          ; entry_addr
%endif
