/* The oldest symbol versions the host-libc helper binds to, so that it
   loads on every glibc from 2.17 (docs/os-side.md, "The host's own C
   library"); the build force-includes this file (-include) into each of the
   helper's objects, for a .symver binds only the references of the object
   it is in. glibc's x86-64 baseline is GLIBC_2.2.5; clock_gettime came into
   libc.so.6 from librt in 2.17 (GLIBC_2.17; the GLIBC_2.2.5 one libc.so.6
   has had since 2.34 is librt's old symbol kept for compatibility). Built
   against a newer glibc's headers, the linker would otherwise take the
   newest version of each: memcpy@GLIBC_2.14 (2.14 made it memmove no more)
   and __libc_start_main@GLIBC_2.34, which crt1.o names from glibc 2.34 on;
   hence the helper's own _start (hostlibc.c). tests/host/os/test_hostlibc.py
   fails on any GLIBC_ version above 2.17 in `objdump -T`. */
#ifndef CLOCKBENCH_GLIBC_BASELINE_H
#define CLOCKBENCH_GLIBC_BASELINE_H

__asm__(".symver clock_gettime,clock_gettime@GLIBC_2.17");
__asm__(".symver clock_getres,clock_getres@GLIBC_2.17");
__asm__(".symver gettimeofday,gettimeofday@GLIBC_2.2.5");
__asm__(".symver time,time@GLIBC_2.2.5");
__asm__(".symver clock,clock@GLIBC_2.2.5");
__asm__(".symver memcpy,memcpy@GLIBC_2.2.5");
__asm__(".symver __libc_start_main,__libc_start_main@GLIBC_2.2.5");

#endif
