; The PVH entry: Xen's direct-boot ABI, which QEMU's -kernel (for an ELF
; with no Multiboot 1 header), Firecracker and Cloud Hypervisor use.
; The ELF note XEN_ELFNOTE_PHYS32_ENTRY names the entry; the VMM starts it
; in 32-bit protected mode, paging off, EBX = &hvm_start_info
; (docs/misc/pvh.pandoc in Xen). From there the Multiboot path's own start
; runs unchanged: kmain tells the two apart by the magic in EAX.
%include "constants.inc"

extern start32

section .note.Xen note alloc noexec nowrite align=4
    dd 4                            ; name size: "Xen" and its NUL
    dd 4                            ; descriptor size: a 32-bit address
    dd XEN_ELFNOTE_PHYS32_ENTRY
    db "Xen", 0
    dd pvh_start32

section .text
bits 32
pvh_start32:
    mov eax, PVH_BOOT_MAGIC
    jmp start32
