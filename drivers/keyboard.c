/* 8042 keyboard controller, polled (see keyboard.h). */
#include "keyboard.h"

#include <stdint.h>

#include "cpu.h"

/* An 8042 answers a command within a millisecond or so; each poll of its
   status port is an ISA cycle of about a microsecond, so this is at least
   tens of milliseconds. */
#define KBC_POLLS 100000

static bool present, translated;
static bool prefix_e0, release; /* state between the bytes of one scan code */

static bool wait_input_empty(void)
{
    for (int i = 0; i < KBC_POLLS; i++)
        if (!(inb(KBC_STATUS) & KBC_STATUS_IN_FULL))
            return true;
    return false;
}

static bool wait_output_full(void)
{
    for (int i = 0; i < KBC_POLLS; i++)
        if (inb(KBC_STATUS) & KBC_STATUS_OUT_FULL)
            return true;
    return false;
}

bool keyboard_probe(const char **why)
{
    present = false;
    if (inb(KBC_STATUS) == 0xFF) {
        *why = "no keyboard controller (its status port reads all ones)";
        return false;
    }
    for (int i = 0; i < 64 && (inb(KBC_STATUS) & KBC_STATUS_OUT_FULL); i++)
        (void)inb(KBC_DATA); /* keys pressed during the run: not meant for us */
    if (!wait_input_empty()) {
        *why = "the keyboard controller does not take commands";
        return false;
    }
    outb(KBC_COMMAND, KBC_CMD_READ_CONFIG);
    if (!wait_output_full()) {
        *why = "the keyboard controller does not answer";
        return false;
    }
    translated = inb(KBC_DATA) & KBC_CONFIG_TRANSLATE;
    prefix_e0 = release = false;
    present = true;
    return true;
}

/* Scan code set 1 (what a translating controller delivers) and set 2. */
static enum key set1(uint8_t code, bool e0)
{
    if (e0)
        switch (code) {
        case 0x48: return KEY_UP;
        case 0x50: return KEY_DOWN;
        case 0x49: return KEY_PAGE_UP;
        case 0x51: return KEY_PAGE_DOWN;
        case 0x47: return KEY_HOME;
        case 0x4F: return KEY_END;
        case 0x1C: return KEY_ENTER;
        default: return KEY_OTHER;
        }
    switch (code) {
    case 0x01: return KEY_ESCAPE;
    case 0x1C: return KEY_ENTER;
    case 0x39: return KEY_SPACE;
    case 0x30: return KEY_B;
    case 0x10: return KEY_Q;
    case 0x13: return KEY_R;
    case 0x48: return KEY_UP; /* the keypad's, with Num Lock off */
    case 0x50: return KEY_DOWN;
    case 0x49: return KEY_PAGE_UP;
    case 0x51: return KEY_PAGE_DOWN;
    case 0x47: return KEY_HOME;
    case 0x4F: return KEY_END;
    default: return KEY_OTHER;
    }
}

static enum key set2(uint8_t code, bool e0)
{
    if (e0)
        switch (code) {
        case 0x75: return KEY_UP;
        case 0x72: return KEY_DOWN;
        case 0x7D: return KEY_PAGE_UP;
        case 0x7A: return KEY_PAGE_DOWN;
        case 0x6C: return KEY_HOME;
        case 0x69: return KEY_END;
        case 0x5A: return KEY_ENTER;
        default: return KEY_OTHER;
        }
    switch (code) {
    case 0x76: return KEY_ESCAPE;
    case 0x5A: return KEY_ENTER;
    case 0x29: return KEY_SPACE;
    case 0x32: return KEY_B;
    case 0x15: return KEY_Q;
    case 0x2D: return KEY_R;
    default: return KEY_OTHER;
    }
}

enum key keyboard_poll(void)
{
    if (!present)
        return KEY_NONE;
    for (int i = 0; i < 8; i++) {
        uint8_t status = inb(KBC_STATUS);
        if (!(status & KBC_STATUS_OUT_FULL))
            return KEY_NONE;
        uint8_t code = inb(KBC_DATA);
        if (status & KBC_STATUS_AUX)
            continue;
        if (code == 0xE0) {
            prefix_e0 = true;
            continue;
        }
        if (code == 0xE1 || code == 0xFA || code == 0xFE || code == 0xAA)
            continue; /* Pause's prefix, ACK, resend, self-test passed */
        if (!translated && code == 0xF0) {
            release = true;
            continue;
        }
        bool e0 = prefix_e0, up = translated ? (code & 0x80) : release;
        prefix_e0 = release = false;
        if (up)
            continue;
        return translated ? set1(code, e0) : set2(code, e0);
    }
    return KEY_NONE;
}

void keyboard_pulse_reset(void)
{
    if (inb(KBC_STATUS) == 0xFF || !wait_input_empty())
        return;
    outb(KBC_COMMAND, KBC_CMD_PULSE_RESET);
    for (int i = 0; i < KBC_POLLS; i++)
        (void)inb(KBC_STATUS); /* give the reset time to land */
}
