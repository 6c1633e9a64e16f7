/* Two things read from AML byte code without running it (ACPI 6.5,
   chapter 20, "ACPI Machine Language Specification"): the \_S5 sleep
   package (7.4.2.5, "\_S5 (Soft Off)": SLP_TYPa and SLP_TYPb for the PM1
   control registers or the sleep control register), and whether a device
   with a given string _HID is declared (QEMU's fw_cfg, "QEMU0002"). Pure:
   it reads only the bytes it is given, and every malformed input gives a
   reason, never a read past the end. */
#ifndef CLOCKBENCH_AML_H
#define CLOCKBENCH_AML_H

#include <stdbool.h>
#include <stdint.h>

#define AML_WHY_CHARS 112

struct aml_s5 {
    bool found;
    uint8_t slp_typa, slp_typb;  /* 3-bit values (PM1 control SLP_TYP, 4.8.3.2.1) */
    uint8_t elements;            /* NumElements the package declares */
    uint32_t offset;             /* of the NameOp, from the start of aml */
    char why[AML_WHY_CHARS];     /* when !found: what was missing or malformed */
};

/* Finds Name(_S5_, Package(){...}) (or \_S5_) in a definition block's AML
   (the bytes after its 36-byte header) and reads its first two elements:
   integers as ZeroOp, OneOp, OnesOp or Byte/Word/DWord/QWordPrefix data.
   One element only: it serves for both (ACPICA's rule). */
bool aml_find_s5(const uint8_t *aml, uint32_t len, struct aml_s5 *out);

/* True when aml declares Name(_HID, "<hid>"): a NameOp, "_HID" and a
   StringPrefix string equal to hid. */
bool aml_has_string_hid(const uint8_t *aml, uint32_t len, const char *hid);

#endif
