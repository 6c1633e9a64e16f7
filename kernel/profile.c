/* Profiles (see profile.h). */
#include "profile.h"

#include "../lib/cmdline.h"
#include "../lib/format.h"
#include "../lib/string.h"

static const struct profile profiles[] = {
    {.name = "quick", .drift_ms = 2000, .hwlat_ms = 500, .latency_fast = 20000, .latency_slow = 2000,
     .sequence_fast = 20000, .sequence_slow = 5000, .latency_ms = 60, .sequence_ms = 20, .slots_per_s = 512,
     .timer_events = 32, .timer_cell_ms = 80},
    {.name = "standard", .drift_ms = 60000, .hwlat_ms = 5000, .latency_fast = 100000, .latency_slow = 10000,
     .sequence_fast = 100000, .sequence_slow = 20000, .latency_ms = 1000, .sequence_ms = 300, .slots_per_s = 128,
     .timer_events = 256, .timer_cell_ms = 600},
    {.name = "soak", .drift_ms = 300000, .hwlat_ms = 30000, .latency_fast = 100000, .latency_slow = 10000,
     .sequence_fast = 100000, .sequence_slow = 20000, .latency_ms = 1000, .sequence_ms = 300, .slots_per_s = 48,
     .timer_events = 1024, .timer_cell_ms = 2000},
};
static struct profile custom;

const struct profile *profile_select(char *note, unsigned note_len)
{
    note[0] = '\0';
    uint64_t seconds;
    const char *dur = cmdline_get(&boot_cmdline, "duration");
    if (dur) {
        if (cmdline_parse_u64(dur, &seconds) && seconds >= 1 && seconds <= 86400) {
            /* quick's sample counts and budgets, with the drift window asked for */
            custom = profiles[0];
            custom.name = "duration";
            custom.drift_ms = (uint32_t)(seconds * 1000);
            custom.hwlat_ms = seconds * 100 < 30000 ? (uint32_t)(seconds * 100) : 30000;
            uint64_t slots = PROFILE_MAX_SLOTS / seconds;
            custom.slots_per_s = (uint32_t)(slots > 512 ? 512 : slots < 1 ? 1 : slots);
            return &custom;
        }
        fmt_format(note, note_len, "duration=%s is not a whole number of seconds from 1 to 86400; ignored", dur);
    }
    const char *name = cmdline_get(&boot_cmdline, "profile");
    if (name) {
        for (unsigned i = 0; i < sizeof profiles / sizeof *profiles; i++)
            if (!strcmp(name, profiles[i].name))
                return &profiles[i];
        unsigned used = 0;
        while (note[used])
            used++;
        fmt_format(note + used, note_len - used, "%sprofile=%s is not quick, standard or soak; using quick", used ? "; " : "",
                   name);
    }
    return &profiles[0];
}
