// The TSC for probe-go's brackets: the pair clockbench-os uses (drivers/cpu.h).
// lfence;rdtsc;lfence before a measured call: nothing of the call starts before
// the read is done; lfence;rdtsc after: the read waits for the call to finish
// (Intel SDM vol. 3A, 18.17; the LFENCE entry in vol. 2A). Go cannot inline an
// assembly function: its call costs the same in the empty bracket and is
// subtracted with it.
#include "textflag.h"

// func tscBegin() uint64
TEXT ·tscBegin(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	LFENCE
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET

// func tscEnd() uint64
TEXT ·tscEnd(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	SHLQ $32, DX
	ORQ  DX, AX
	MOVQ AX, ret+0(FP)
	RET
