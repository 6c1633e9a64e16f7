; Entry stubs for the 32 exception vectors (Intel SDM vol. 3A, 6.15). Each
; pushes a uniform frame (struct trap_frame in kernel/trap.h) and calls
; exception_dispatch(frame). Vectors 8, 10-14, 17, 21, 29, 30 push an error
; code themselves; the others push 0 so the frame is the same.
global exception_stubs

extern exception_dispatch

%macro STUB_NOERR 1
stub_%1:
    push qword 0
    push qword %1
    jmp exception_common
%endmacro
%macro STUB_ERR 1
stub_%1:
    push qword %1
    jmp exception_common
%endmacro

section .text
bits 64
STUB_NOERR 0
STUB_NOERR 1
STUB_NOERR 2
STUB_NOERR 3
STUB_NOERR 4
STUB_NOERR 5
STUB_NOERR 6
STUB_NOERR 7
STUB_ERR   8
STUB_NOERR 9
STUB_ERR   10
STUB_ERR   11
STUB_ERR   12
STUB_ERR   13
STUB_ERR   14
STUB_NOERR 15
STUB_NOERR 16
STUB_ERR   17
STUB_NOERR 18
STUB_NOERR 19
STUB_NOERR 20
STUB_ERR   21
STUB_NOERR 22
STUB_NOERR 23
STUB_NOERR 24
STUB_NOERR 25
STUB_NOERR 26
STUB_NOERR 27
STUB_NOERR 28
STUB_ERR   29
STUB_ERR   30
STUB_NOERR 31

exception_common:
    push rax
    push rbx
    push rcx
    push rdx
    push rsi
    push rdi
    push rbp
    push r8
    push r9
    push r10
    push r11
    push r12
    push r13
    push r14
    push r15
    mov rdi, rsp
    cld
    ; Align the stack for the C call; the frame pointer is already in rdi.
    mov rbx, rsp
    and rsp, ~15
    call exception_dispatch
    mov rsp, rbx
    pop r15
    pop r14
    pop r13
    pop r12
    pop r11
    pop r10
    pop r9
    pop r8
    pop rbp
    pop rdi
    pop rsi
    pop rdx
    pop rcx
    pop rbx
    pop rax
    add rsp, 16
    iretq

section .rodata
align 8
exception_stubs:
%assign i 0
%rep 32
    dq stub_ %+ i
%assign i i + 1
%endrep
