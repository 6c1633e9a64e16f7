/* The verdict (see verdict.h). */
#include "verdict.h"

static const char *xs(char buf[FMT_FIXED_CHARS], struct xf v, unsigned decimals)
{
    return fmt_fixed(buf, xf_to_fixed(v, decimals), decimals, decimals);
}

const char *read_cost_text(char buf[READ_COST_CHARS], const struct read_cost *c)
{
    char a[FMT_FIXED_CHARS], b[FMT_FIXED_CHARS];
    if (!c->below_step)
        fmt_format(buf, READ_COST_CHARS, "%s ns", xs(a, c->p50_ns, 1));
    else if (c->batch_done)
        fmt_format(buf, READ_COST_CHARS, "below the TSC's step (%s ns): %s ns a read by the batch", xs(a, c->step_ns, 1),
                   xs(b, c->batch_ns, 2));
    else
        fmt_format(buf, READ_COST_CHARS, "below the TSC's step (%s ns): not resolved", xs(a, c->step_ns, 1));
    return buf;
}

const char *read_cost_cell(char buf[FMT_FIXED_CHARS], const struct read_cost *c)
{
    char a[FMT_FIXED_CHARS];
    if (!c->below_step)
        return xs(buf, c->p50_ns, 1);
    if (c->batch_done)
        fmt_format(buf, FMT_FIXED_CHARS, "%s*", xs(a, c->batch_ns, 2));
    else
        fmt_format(buf, FMT_FIXED_CHARS, "<%s", xs(a, c->step_ns, 1));
    return buf;
}

int64_t read_cost_ns_x10(const struct read_cost *c)
{
    if (!c->below_step)
        return xf_to_fixed(c->p50_ns, 1);
    return xf_to_fixed(c->batch_done ? c->batch_ns : c->step_ns, 1);
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
        /* the read's one figure; below the TSC's step its p50 is the step's
           quantisation: the batch's figure, or the step where that is finer */
        struct xf read = in->cost.p50_ns;
        if (in->cost.below_step && in->cost.batch_done)
            read = xf_cmp(in->cost.batch_ns, in->cost.step_ns) > 0 ? in->cost.batch_ns : in->cost.step_ns;
        struct xf res = in->repeats && xf_cmp(in->step_ns, read) > 0 ? in->step_ns : read;
        read_cost_cell(v->read, &in->cost);
        xs(v->res, res, 1);
        v->read_ns_x10 = read_cost_ns_x10(&in->cost);
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
