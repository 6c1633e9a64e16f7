/* Finds __vdso_clock_gettime in the vDSO the kernel maps into every process
   (its address is in the auxiliary vector, AT_SYSINFO_EHDR), so the vDSO
   path can be measured on its own, apart from what libc does around it.
   The vDSO is a whole small ELF image in memory; its .dynsym names the
   function (System V ABI, "Symbol Table"; Linux Documentation/ABI/stable/vdso). */
#include <elf.h>
#include <string.h>
#include <sys/auxv.h>

#include "os_calls.h"

vdso_clock_gettime_fn os_vdso_clock_gettime;

const char *os_vdso_find(void)
{
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return "the kernel gave no vDSO (AT_SYSINFO_EHDR is 0)";
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)base;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
        return "the vDSO is not a 64-bit ELF image";
    /* symbol values are link-time addresses: the first PT_LOAD's p_vaddr maps to base */
    const Elf64_Phdr *ph = (const Elf64_Phdr *)(base + eh->e_phoff);
    uintptr_t bias = 0;
    bool loaded = false;
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD) {
            bias = base - (uintptr_t)ph[i].p_vaddr;
            loaded = true;
            break;
        }
    if (!loaded || !eh->e_shoff)
        return "the vDSO has no loadable segment or no section headers";
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(base + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
            continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(base + sh[i].sh_offset);
        const char *names = (const char *)(base + sh[sh[i].sh_link].sh_offset);
        size_t count = sh[i].sh_entsize ? sh[i].sh_size / sh[i].sh_entsize : 0;
        for (size_t k = 0; k < count; k++)
            if (sym[k].st_shndx != SHN_UNDEF && strcmp(names + sym[k].st_name, "__vdso_clock_gettime") == 0) {
                os_vdso_clock_gettime = (vdso_clock_gettime_fn)(bias + sym[k].st_value);
                return 0;
            }
    }
    return "the vDSO has no __vdso_clock_gettime";
}
