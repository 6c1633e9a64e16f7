/* Exception names (see trap.h); Intel SDM vol. 3A, table 6-1. */
#include "trap.h"

static const char *const names[32] = {
    "divide error (#DE)", "debug (#DB)", "non-maskable interrupt (NMI)", "breakpoint (#BP)",
    "overflow (#OF)", "bound range exceeded (#BR)", "invalid opcode (#UD)", "device not available (#NM)",
    "double fault (#DF)", "coprocessor segment overrun", "invalid TSS (#TS)", "segment not present (#NP)",
    "stack-segment fault (#SS)", "general protection (#GP)", "page fault (#PF)", "reserved 15",
    "x87 floating-point error (#MF)", "alignment check (#AC)", "machine check (#MC)", "SIMD floating-point (#XM)",
    "virtualization (#VE)", "control protection (#CP)", "reserved 22", "reserved 23",
    "reserved 24", "reserved 25", "reserved 26", "reserved 27",
    "hypervisor injection (#HV)", "VMM communication (#VC)", "security (#SX)", "reserved 31",
};

const char *exception_name(uint64_t vector) { return vector < 32 ? names[vector] : "not an exception"; }
