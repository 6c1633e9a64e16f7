/* The verdict (see verdict.h). */
#include "verdict.h"

static const char *xs(char buf[FMT_FIXED_CHARS], struct xf v, unsigned decimals)
{
    return fmt_fixed(buf, xf_to_fixed(v, decimals), decimals, decimals);
}

static const char *mono_text(enum mono_state m)
{
    switch (m) {
    case MONO_YES:
        return "yes";
    case MONO_NO:
        return "NO";
    case MONO_STUCK:
        return "STUCK";
    default:
        return "?";
    }
}

void verdict_make(const struct verdict_input *in, struct verdict_row *v)
{
    char c[FMT_FIXED_CHARS], d[FMT_FIXED_CHARS];
    bool anything = in->measured || in->mono != MONO_UNKNOWN || in->freq != FREQ_NONE;
    *v = (struct verdict_row){.present = in->present, .measured = in->present && anything};
    if (!v->measured) {
        v->advice = in->present ? "not measured (its experiments were not chosen)" : in->absent_reason;
        return;
    }
    /* resolution: one step when reads repeat, else the read cost; "-" for
       what the chosen experiments did not measure */
    fmt_format(v->read, sizeof v->read, "-");
    fmt_format(v->res, sizeof v->res, "-");
    if (in->measured) {
        struct xf res = in->repeats && xf_cmp(in->step_ns, in->read_ns) > 0 ? in->step_ns : in->read_ns;
        if (in->read_below_step) {
            char step[FMT_FIXED_CHARS];
            fmt_format(v->read, sizeof v->read, "<%s", xs(step, in->tsc_step_ns, 1));
        } else {
            xs(v->read, in->read_ns, 1);
        }
        xs(v->res, res, 1);
        v->read_ns_x10 = xf_to_fixed(in->read_ns, 1);
        v->res_ns_x10 = xf_to_fixed(res, 1);
    } else if (in->repeats) {
        xs(v->res, in->step_ns, 1);
        v->res_ns_x10 = xf_to_fixed(in->step_ns, 1);
    }
    fmt_format(v->freq, sizeof v->freq, "-");
    switch (in->freq) {
    case FREQ_TSC_MEASURED:
        fmt_format(v->freq, sizeof v->freq, "+-%s ppm", xs(c, in->uncertainty_ppm, 3));
        v->has_ppm = true;
        v->ppm_x100 = xf_to_fixed(in->uncertainty_ppm, 2);
        break;
    case FREQ_REFERENCE:
        fmt_format(v->freq, sizeof v->freq, "reference");
        break;
    case FREQ_VS_NOMINAL:
        fmt_format(v->freq, sizeof v->freq, "%s+-%s ppm", xs(c, in->freq_ppm, 2), xs(d, in->uncertainty_ppm, 2));
        v->has_ppm = true;
        v->ppm_x100 = xf_to_fixed(in->freq_ppm, 2);
        break;
    case FREQ_NONE:
        break;
    }
    fmt_format(v->mono, sizeof v->mono, "%s", mono_text(in->mono));
    if (in->mono == MONO_NO || in->mono == MONO_STUCK)
        v->advice = in->is_tsc ? "do not trust: it stepped backwards" : "do not trust: not monotonic or stopped";
    else if (in->is_tsc && in->tsc_intercepted)
        v->advice = "monotonic, but the hypervisor traps every read: costly here";
    else if (in->is_tsc && !in->tsc_invariant)
        v->advice = "cheap, but not invariant: its rate may vary with power states";
    else
        v->advice = in->advice_good;
}
