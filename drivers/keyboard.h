/* The PS/2 keyboard through the 8042 keyboard controller, polled with
   interrupts off: enough to read a few keys on the final screen and to ask
   the controller to reset the machine. (IBM PS/2 Technical Reference,
   "Keyboard/Auxiliary Device Controller"; scan code sets 1 and 2.) On a
   machine with no controller, or with USB keyboards that the firmware does
   not emulate as PS/2, no key arrives. */
#ifndef CLOCKBENCH_KEYBOARD_H
#define CLOCKBENCH_KEYBOARD_H

#include <stdbool.h>

#define KBC_DATA 0x60
#define KBC_STATUS 0x64 /* read */
#define   KBC_STATUS_OUT_FULL (1u << 0)
#define   KBC_STATUS_IN_FULL  (1u << 1)
#define   KBC_STATUS_AUX      (1u << 5) /* the byte waiting is the mouse's */
#define KBC_COMMAND 0x64 /* write */
#define   KBC_CMD_READ_CONFIG 0x20
#define   KBC_CONFIG_TRANSLATE (1u << 6) /* set 2 scan codes reach us as set 1 */
#define   KBC_CMD_PULSE_RESET 0xFE      /* pulse output line 0: the CPU's reset */

enum key {
    KEY_NONE,
    KEY_OTHER, /* a key this driver does not name */
    KEY_UP,
    KEY_DOWN,
    KEY_PAGE_UP,
    KEY_PAGE_DOWN,
    KEY_HOME,
    KEY_END,
    KEY_SPACE,
    KEY_ESCAPE,
    KEY_ENTER,
    KEY_B,
    KEY_Q,
    KEY_R,
};

/* Whether a controller answers, and which scan code set it delivers. False
   (with why) when the status port reads all ones or the controller does
   not answer a command in bounded time. */
bool keyboard_probe(const char **why);
/* One key press if one is waiting, else KEY_NONE; never waits. Releases,
   repeats of prefixes and the mouse's bytes are consumed and ignored. */
enum key keyboard_poll(void);
/* Asks the controller to pulse the CPU's reset line. Returns if nothing
   happened within a bounded time. */
void keyboard_pulse_reset(void);

#endif
