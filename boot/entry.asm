; 32-bit entry from a Multiboot 1 or 2 loader: check for long mode, build the
; boot page tables, switch to 64-bit mode and call kmain(magic, info).
; Intel SDM vol. 3A, 9.8.5 "Initializing IA-32e Mode".
; 64-bit entry (start64) from clockbench's EFI entry (efi/stub.c), already in
; long mode on the firmware's identity map, boot services left: the same
; registers (EAX magic, EBX info below 4 GiB), our own tables, GDT and stack.
%include "constants.inc"

extern kmain
extern run_finish_crashed

global start32
global start64
global boot_pml4, boot_pdpt, boot_pd

section .bss
align PAGE_SIZE
boot_pml4:  resb PAGE_SIZE
boot_pdpt:  resb PAGE_SIZE
boot_pd:    resb PAGE_SIZE * BOOT_MAPPED_GIB
boot_stack: resb BOOT_STACK_SIZE
boot_stack_top:
saved_magic: resd 1
saved_info:  resd 1

section .rodata
align 8
gdt64:
    dq 0                                    ; null
    dq 0x00209A0000000000                   ; 0x08: 64-bit code, present, ring 0
    dq 0x0000920000000000                   ; 0x10: data, present, writable
gdt64_end:
gdt64_ptr:
    dw gdt64_end - gdt64 - 1
    dq gdt64

no_lm_msg: db "clockbench: this CPU has no 64-bit long mode; nothing can run.", 13, 10, 0
; isa-debug-exit is written only where the machine is QEMU by its own word:
; TCG's CPUID signature. Anything else (a PC, Bochs, a KVM guest, which
; cannot tell QEMU from another VMM before the ACPI tables) only halts: no
; write to a port nobody named (issue 37). ACPI S5 needs the tables, read
; by C code that needs long mode: not here.
tcg_exit_msg: db "clockbench: QEMU's TCG (CPUID 0x40000000): ending through isa-debug-exit (I/O 0xf4)", 13, 10, 0
no_exit_msg: db "  QEMU has no isa-debug-exit device. Halted; it is safe to power off.", 13, 10, 0
halt_msg: db "clockbench: machine not identified as QEMU: no isa-debug-exit write, no ACPI", 13, 10
          db "  power-off without long mode. Halted; it is safe to power off.", 13, 10, 0

; The boot page tables: 0..4 GiB identity-mapped with 2 MiB pages. The same
; instructions serve the 32-bit entry and the 64-bit one (the tables lie
; below 4 GiB, so 32-bit addresses reach them in either mode).
%macro BUILD_BOOT_PAGE_TABLES 0
    ; PML4[0] -> PDPT; PDPT[0..3] -> four page directories of 2 MiB pages.
    mov eax, boot_pdpt
    or eax, PTE_PRESENT | PTE_WRITE
    mov [boot_pml4], eax

    xor ecx, ecx
%%fill_pdpt:
    mov eax, ecx
    shl eax, 12
    add eax, boot_pd
    or eax, PTE_PRESENT | PTE_WRITE
    mov [boot_pdpt + ecx * 8], eax
    inc ecx
    cmp ecx, BOOT_MAPPED_GIB
    jb %%fill_pdpt

    ; 2048 entries of 2 MiB cover 4 GiB; entries at or above the MMIO hole are
    ; uncached (PCD|PWT) so device registers are never cached or combined.
    xor ecx, ecx
%%fill_pd:
    mov eax, ecx
    shl eax, 21
    mov edx, eax
    or eax, PTE_PRESENT | PTE_WRITE | PTE_HUGE
    cmp edx, MMIO_HOLE_START
    jb %%cached
    or eax, PTE_PCD | PTE_PWT
%%cached:
    mov [boot_pd + ecx * 8], eax
    mov dword [boot_pd + ecx * 8 + 4], 0
    inc ecx
    cmp ecx, 512 * BOOT_MAPPED_GIB
    jb %%fill_pd

%endmacro

section .text
bits 32
start32:
    cli
    mov esp, boot_stack_top
    mov [saved_magic], eax
    mov [saved_info], ebx

    ; CPUID is present when EFLAGS.ID can be toggled.
    pushfd
    pop eax
    mov ecx, eax
    xor eax, EFLAGS_ID
    push eax
    popfd
    pushfd
    pop eax
    push ecx
    popfd
    cmp eax, ecx
    je .no_long_mode

    mov eax, CPUID_EXT_MAX
    cpuid
    cmp eax, CPUID_EXT_FEATURES
    jb .no_long_mode
    mov eax, CPUID_EXT_FEATURES
    cpuid
    test edx, CPUID_EXT_EDX_LM
    jz .no_long_mode

    BUILD_BOOT_PAGE_TABLES

    mov eax, boot_pml4
    mov cr3, eax
    mov eax, cr4
    or eax, CR4_PAE
    mov cr4, eax
    mov ecx, MSR_EFER
    rdmsr
    or eax, EFER_LME
    wrmsr
    mov eax, cr0
    or eax, CR0_PG | CR0_PE
    mov cr0, eax

    lgdt [gdt64_ptr]
    jmp GDT_CODE64:long_mode

.no_long_mode:
    mov esi, no_lm_msg
    call early_puts
    ; QEMU's TCG names itself in CPUID's hypervisor leaf; without CPUID
    ; (EFLAGS.ID fixed) or the hypervisor bit, nothing is identified
    pushfd
    pop eax
    mov ecx, eax
    xor eax, EFLAGS_ID
    push eax
    popfd
    pushfd
    pop eax
    push ecx
    popfd
    cmp eax, ecx
    je .unidentified
    mov eax, 1
    cpuid
    test ecx, CPUID1_ECX_HYPERVISOR
    jz .unidentified
    mov eax, CPUID_HV_VENDOR
    cpuid
    cmp ebx, 'TCGT'
    jne .unidentified
    cmp ecx, 'CGTC'
    jne .unidentified
    cmp edx, 'GTCG'
    jne .unidentified
    mov esi, tcg_exit_msg
    call early_puts
    mov al, EXIT_NOTHING_RAN
    out DEBUG_EXIT_PORT, al
    mov esi, no_exit_msg        ; still here: QEMU without the device
    call early_puts
    jmp .halt32
.unidentified:
    mov esi, halt_msg
    call early_puts
.halt32:
    hlt
    jmp .halt32

; Bounded polled writes of the string at ESI to COM1: if no UART is
; there, the bytes are lost, not waited on.
early_puts:
.next_char:
    lodsb
    test al, al
    jz .done
    mov bl, al
    mov ecx, EARLY_TX_SPINS
.wait_tx:
    mov dx, COM1 + UART_LSR
    in al, dx
    test al, UART_LSR_THRE
    jnz .send
    loop .wait_tx
.send:
    mov al, bl
    mov dx, COM1
    out dx, al
    jmp .next_char
.done:
    ret

bits 64
start64:
    cli
    ; Our stack at once: the firmware's may lie above 4 GiB, which our
    ; tables do not map, and the far return below pushes onto it.
    mov rsp, boot_stack_top
    mov [saved_magic], eax
    mov [saved_info], ebx
    BUILD_BOOT_PAGE_TABLES
    ; This code and the tables are identity-mapped by both the firmware's
    ; tables and ours, so the switch of CR3 keeps the next fetch in place.
    mov eax, boot_pml4
    mov cr3, rax
    lgdt [gdt64_ptr]
    lea rax, [rel long_mode]
    push qword GDT_CODE64
    push rax
    retfq

long_mode:
    mov ax, GDT_DATA
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor ax, ax
    mov fs, ax
    mov gs, ax
    mov rsp, boot_stack_top

    ; No x87/SSE is enabled or used: the kernel is built -mgeneral-regs-only
    ; and does all arithmetic in integers (docs/output.md, "Numbers"). Some
    ; hypervisors (KVM on PVM hosts, like our CI's) cannot run FPU or SSE
    ; instructions in a guest like this one at all.

    mov edi, [saved_magic]
    mov esi, [saved_info]
    call kmain
    ; kmain ends the run itself; reaching here is our own bug.
    call run_finish_crashed
.halt64:
    cli
    hlt
    jmp .halt64
