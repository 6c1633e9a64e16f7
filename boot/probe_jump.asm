; A minimal setjmp/longjmp pair for recoverable probes (kernel/probe.c): the
; exception handler jumps back to the armed probe instead of ending the run.
; Saves only what the System V AMD64 ABI says a callee must preserve.
global probe_setjmp
global probe_longjmp

section .text
bits 64
; int probe_setjmp(struct probe_jmp *buf)   rdi = buf
probe_setjmp:
    mov [rdi + 0],  rbx
    mov [rdi + 8],  rbp
    mov [rdi + 16], r12
    mov [rdi + 24], r13
    mov [rdi + 32], r14
    mov [rdi + 40], r15
    lea rax, [rsp + 8]          ; rsp as the caller sees it after we return
    mov [rdi + 48], rax
    mov rax, [rsp]              ; return address
    mov [rdi + 56], rax
    xor eax, eax
    ret

; void probe_longjmp(struct probe_jmp *buf, int value)   rdi = buf, esi = value
probe_longjmp:
    mov rbx, [rdi + 0]
    mov rbp, [rdi + 8]
    mov r12, [rdi + 16]
    mov r13, [rdi + 24]
    mov r14, [rdi + 32]
    mov r15, [rdi + 40]
    mov rsp, [rdi + 48]
    mov eax, esi
    test eax, eax
    jnz .nonzero
    inc eax
.nonzero:
    jmp [rdi + 56]
