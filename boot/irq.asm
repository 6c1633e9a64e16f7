; Entry stubs for the interrupt vectors 32-255 (Intel SDM vol. 3A, 6.12).
; The first thing each does after saving the two registers RDTSC writes is
; read the TSC: the timer-latency experiment measures from the deadline to
; this reading. Then it pushes its vector and calls
; irq_dispatch(vector, entry_tsc) with the caller-saved registers saved.
; Interrupts push no error code.
global irq_stubs

extern irq_dispatch

%define IRQ_FIRST_VECTOR 32
%define IRQ_VECTORS      (256 - IRQ_FIRST_VECTOR)

section .text
bits 64
%assign v IRQ_FIRST_VECTOR
%rep IRQ_VECTORS
irq_stub_ %+ v:
    push rax
    push rdx
    rdtsc
    push qword v
    jmp irq_common
%assign v v + 1
%endrep

; Stack: vector, rdx, rax, then the CPU's frame. rdx:rax hold the TSC.
irq_common:
    push rcx
    push rsi
    push rdi
    push r8
    push r9
    push r10
    push r11
    push rbx
    shl rdx, 32
    or rax, rdx
    mov rsi, rax                ; entry TSC
    mov rdi, [rsp + 8 * 8]      ; vector
    cld
    mov rbx, rsp                ; callee-saved: restores the stack after the call
    and rsp, ~15
    call irq_dispatch
    mov rsp, rbx
    pop rbx
    pop r11
    pop r10
    pop r9
    pop r8
    pop rdi
    pop rsi
    pop rcx
    add rsp, 8                  ; the vector
    pop rdx
    pop rax
    iretq

section .rodata
align 8
irq_stubs:
%assign v IRQ_FIRST_VECTOR
%rep IRQ_VECTORS
    dq irq_stub_ %+ v
%assign v v + 1
%endrep
