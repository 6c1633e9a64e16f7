/* The EFI entry's payload and the sections shim wants (efi/stub.lds). */
    .section .payload, "a"
    .balign 4096
    .globl payload_start, payload_end
    .hidden payload_start, payload_end
payload_start:
    .incbin "clockbench.bin"
payload_end:

/* SBAT (rhboot/shim, SBAT.md): generated from efi/sbat.csv.in */
    .section .sbat, "a"
    .incbin "sbat.csv"

/* One empty base-relocation block (PE/COFF 6.6): nothing to relocate. */
    .section .reloc, "a"
    .long 0
    .long 10
    .word 0

    .section .note.GNU-stack, "", @progbits
