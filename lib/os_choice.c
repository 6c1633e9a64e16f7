/* The clocksource choice (see os_choice.h). */
#include "os_choice.h"

#include "counters.h"
#include "format.h"

struct candidate {
    const char *name;
    int counter, rating;
    const char *note;
};

void os_choice_make(const struct os_choice_input *in, struct os_choice *out)
{
    struct candidate c[6];
    int n = 0;
    bool synchronised = in->invariant_tsc || in->single_cpu || in->intel;
    bool tsc_ok = in->tsc && synchronised && in->tsc_behaved;
    if (tsc_ok)
        c[n++] = (struct candidate){"tsc", COUNTER_TSC, 300,
                                    in->invariant_tsc ? "the CPU reports an invariant TSC"
                                    : in->single_cpu  ? "no invariant TSC, but on one CPU Linux keeps it"
                                                      : "no invariant TSC, but Linux trusts an Intel CPU's"};
    if (in->hyperv) {
        if (in->hv_page)
            c[n++] = (struct candidate){"hyperv_clocksource_tsc_page", COUNTER_HV_REF_PAGE, in->hv_tsc_invariant ? 250 : 500,
                                        in->hv_tsc_invariant ? "lowered: Hyper-V offers TSC_INVARIANT" : "Hyper-V's page"};
        if (in->hv_msr)
            c[n++] = (struct candidate){"hyperv_clocksource_msr", COUNTER_HV_REF_COUNTER, in->hv_tsc_invariant ? 245 : 495, "an MSR read"};
    } else if (in->kvm && in->kvmclock) {
        c[n++] = (struct candidate){"kvm-clock", COUNTER_KVMCLOCK, in->invariant_tsc ? 299 : 400,
                                    in->invariant_tsc ? "lowered to 299: the CPU reports an invariant TSC" : "KVM's paravirtual clock"};
    }
    if (in->hpet)
        c[n++] = (struct candidate){"hpet", COUNTER_HPET, 250, ""};
    if (in->acpi_pm)
        c[n++] = (struct candidate){"acpi_pm", COUNTER_ACPI_PM, 200, ""};
    *out = (struct os_choice){.counter = -1};
    int best = -1, second = -1;
    for (int i = 0; i < n; i++) {
        if (best < 0 || c[i].rating > c[best].rating) {
            second = best;
            best = i;
        } else if (second < 0 || c[i].rating > c[second].rating)
            second = i;
    }
    if (best < 0) {
        fmt_format(out->why, sizeof out->why, "no clocksource Linux would trust: no invariant TSC, no paravirtual clock, no HPET, no PM timer");
        return;
    }
    out->clock = c[best].name;
    out->counter = c[best].counter;
    out->rating = c[best].rating;
    const char *tsc_note = !in->tsc ? "no TSC" : !synchronised ? "the CPU reports no invariant TSC"
                           : !in->tsc_behaved ? "the TSC misbehaved here" : "";
    if (second >= 0)
        fmt_format(out->why, sizeof out->why, "rating %d over %s's %d%s%s%s%s", c[best].rating, c[second].name, c[second].rating,
                   c[best].note[0] ? "; " : "", c[best].note, tsc_ok || !tsc_note[0] ? "" : "; ", tsc_ok ? "" : tsc_note);
    else
        fmt_format(out->why, sizeof out->why, "rating %d, the only candidate%s%s%s%s", c[best].rating, c[best].note[0] ? "; " : "",
                   c[best].note, tsc_ok || !tsc_note[0] ? "" : "; ", tsc_ok ? "" : tsc_note);
}
