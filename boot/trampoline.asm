; The application processors' way from real mode to long mode (Intel SDM
; vol. 3A, 9.4 "Multiple-Processor (MP) Initialization" and 9.8.5
; "Initializing IA-32e Mode"). kernel/smp.c copies this blob to free pages
; below 1 MiB, fills in its shared header and one block per AP, and sends
; each AP a STARTUP IPI whose vector is the first page's number: the AP
; starts here in real mode with CS = page >> 4 and IP = 0. Every AP runs the
; same code, so each first finds its own block by its APIC ID (CPUID leaf
; 0xB's x2APIC ID where the leaf exists, else leaf 1's initial APIC ID:
; the IDs the MADT lists) and from then on writes only there: a late AP can
; never take the stack or the index meant for another (Linux finds its
; per-CPU data the same way, by APIC ID, in head_64.S). It claims its block
; (0 -> 1, locked) before it takes the stack; the boot CPU withdraws a block
; it gave up on (0 -> 2), so a CPU that wakes after that halts instead.
; Everything is position independent in real mode (DS = CS); the 32- and
; 64-bit parts find the page through EBX and the block through ESI, and the
; linear addresses of the far jumps and the GDT are patched in by the
; kernel. The header's layout is struct trampoline_params and the block's
; struct trampoline_cpu in kernel/smp.c (TRAMP_* and BLK_* below).
%include "constants.inc"

%define TRAMP_PM_JUMP       8       ; m16:32 far pointer to pm_entry (linear)
%define TRAMP_GDTR          14      ; limit (2), base (4, linear)
%define TRAMP_CR3           20
%define TRAMP_LM_JUMP       24      ; m16:32 far pointer to lm_entry (linear)
%define TRAMP_ENTRY         32      ; the C function the AP calls, never returns
%define TRAMP_BLOCKS        40      ; offset of the first block from the page (2)
%define TRAMP_BLOCK_COUNT   42      ; how many blocks (2)
%define TRAMP_STRANGERS     44      ; APs that found no block of their own (4)
%define TRAMP_STRANGER_ID   48      ; the last such AP's APIC ID (4)
%define TRAMP_IDTR          56      ; limit (2), base (8): the boot CPU's IDT

%define BLK_APIC_ID         0       ; (4)
%define BLK_STAGE           4       ; how far the AP got (TRAMP_STAGE_* in kernel/smp.c) (1)
%define BLK_CLAIM           5       ; 0 open, 1 taken by its AP, 2 withdrawn by the boot CPU (1)
%define BLK_STACK           8       ; its stack top (8)
%define BLK_ARG             16      ; its argument (8)
%define BLK_SIZE            24

%define CLAIM_TAKEN         1
%define CPUID_X2APIC_LEAF   0xB

%define STAGE_REAL          1
%define STAGE_PROTECTED     2
%define STAGE_LONG          3

%define CR0_NW              (1 << 29)
%define CR0_CD              (1 << 30)
%define TRAMP_CODE32        0x18
%define TRAMP_DATA          0x10

global trampoline_start, trampoline_end

section .rodata
align 16
bits 16
trampoline_start:
    jmp short real_entry
    align 8, db 0
params:
    times 80 - ($ - trampoline_start) db 0

real_entry:
    cli
    cld
    ; this CPU's APIC ID, into EDI (CPUID overwrites EAX-EDX)
    xor eax, eax
    cpuid
    cmp eax, CPUID_X2APIC_LEAF
    jb .initial_id
    mov eax, CPUID_X2APIC_LEAF
    xor ecx, ecx
    cpuid
    mov edi, edx                            ; x2APIC ID
    test bx, bx                             ; EBX[15:0] = 0: the leaf is not really there
    jnz .have_id
.initial_id:
    mov eax, 1
    cpuid
    mov edi, ebx
    shr edi, 24                             ; initial APIC ID, EBX[31:24]
.have_id:
    mov ax, cs
    mov ds, ax
    movzx ebx, ax
    shl ebx, 4                              ; the page's linear address, kept in EBX throughout
    movzx esi, word [TRAMP_BLOCKS]
    movzx ecx, word [TRAMP_BLOCK_COUNT]
.find:
    jecxz .stranger
    cmp [si + BLK_APIC_ID], edi
    je .found
    add si, BLK_SIZE
    dec ecx
    jmp .find
.stranger:
    lock inc dword [TRAMP_STRANGERS]
    mov [TRAMP_STRANGER_ID], edi
.park:
    cli
    hlt
    jmp .park
.found:
    mov byte [si + BLK_STAGE], STAGE_REAL   ; ESI: this CPU's block, from the page
    o32 lgdt [TRAMP_GDTR]
    ; After INIT, CR0 has CD and NW set (SDM vol. 3A, table 9-1): caches
    ; off would make this CPU far slower than the boot CPU and every figure
    ; taken on it wrong.
    mov eax, cr0
    and eax, ~(CR0_CD | CR0_NW)
    or eax, CR0_PE
    mov cr0, eax
    jmp dword far [TRAMP_PM_JUMP]

bits 32
pm_entry:
    mov ax, TRAMP_DATA
    mov ds, ax
    mov es, ax
    mov ss, ax
    mov byte [ebx + esi + BLK_STAGE], STAGE_PROTECTED
    mov eax, cr4
    or eax, CR4_PAE
    mov cr4, eax
    mov eax, [ebx + TRAMP_CR3]              ; the boot CPU's tables: 0-4 GiB identity-mapped
    mov cr3, eax
    mov ecx, MSR_EFER
    rdmsr
    or eax, EFER_LME
    wrmsr
    mov eax, cr0
    or eax, CR0_PG
    mov cr0, eax
    jmp far [ebx + TRAMP_LM_JUMP]

bits 64
lm_entry:
    mov ax, TRAMP_DATA
    mov ds, ax
    mov es, ax
    mov ss, ax
    xor eax, eax
    mov fs, ax
    mov gs, ax
    mov ebx, ebx                            ; upper halves are undefined after the switch (SDM vol. 1, 3.4.1.1)
    mov esi, esi
    add rsi, rbx                            ; RSI: the block's linear address
    mov byte [rsi + BLK_STAGE], STAGE_LONG
    mov cl, CLAIM_TAKEN                     ; AL = 0: the block must still be open
    lock cmpxchg [rsi + BLK_CLAIM], cl
    jne .halt                               ; withdrawn: the boot CPU gave up on this CPU
    lidt [rbx + TRAMP_IDTR]
    mov rsp, [rsi + BLK_STACK]
    mov rdi, [rsi + BLK_ARG]
    mov rax, [rbx + TRAMP_ENTRY]
    xor ebp, ebp
    call rax
.halt:
    cli
    hlt
    jmp .halt

; The AP's own GDT: it stays in this page, which is kept for the run.
; 0x08 and 0x10 match the kernel's selectors (boot/entry.asm), so the IDT's
; gates (selector 0x08) work on an AP; 0x18 is for the 32-bit step.
align 8
global trampoline_gdt
trampoline_gdt:
    dq 0
    dq 0x00209A0000000000                   ; 0x08: 64-bit code
    dq 0x00CF92000000FFFF                   ; 0x10: flat data, 4 GiB, for 32-bit and 64-bit mode
    dq 0x00CF9A000000FFFF                   ; 0x18: flat 32-bit code, 4 GiB
trampoline_gdt_end:
trampoline_end:

; Offsets the kernel needs to patch the far pointers and the GDTR.
global trampoline_pm_entry_off, trampoline_lm_entry_off, trampoline_gdt_off, trampoline_gdt_size
align 4
trampoline_pm_entry_off: dd pm_entry - trampoline_start
trampoline_lm_entry_off: dd lm_entry - trampoline_start
trampoline_gdt_off:      dd trampoline_gdt - trampoline_start
trampoline_gdt_size:     dd trampoline_gdt_end - trampoline_gdt
