/* Kernel command line parsing (see cmdline.h). */
#include "cmdline.h"

struct cmdline boot_cmdline;

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static bool str_eq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

void cmdline_parse(struct cmdline *cl, const char *text)
{
    cl->count = 0;
    cl->truncated = false;
    int pos = 0;
    const char *p = text ? text : "";
    while (*p) {
        while (is_space(*p))
            p++;
        if (!*p)
            break;
        if (cl->count == CMDLINE_MAX_WORDS) {
            cl->truncated = true;
            break;
        }
        int start = pos;
        const char *value = 0;
        while (*p && !is_space(*p)) {
            if (pos >= CMDLINE_MAX_CHARS - 2) {
                cl->truncated = true;
                break;
            }
            if (*p == '=' && !value) {
                cl->text[pos++] = '\0';
                value = &cl->text[pos];
            } else {
                cl->text[pos++] = *p;
            }
            p++;
        }
        cl->text[pos++] = '\0';
        if (cl->truncated) {
            /* a word cut short is dropped, not half-used */
            break;
        }
        cl->key[cl->count] = &cl->text[start];
        cl->value[cl->count] = value ? value : &cl->text[pos - 1];
        cl->count++;
    }
}

const char *cmdline_get(const struct cmdline *cl, const char *key)
{
    for (int i = cl->count - 1; i >= 0; i--)
        if (str_eq(cl->key[i], key))
            return cl->value[i];
    return 0;
}

bool cmdline_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    unsigned base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
        if (!*s)
            return false;
    }
    uint64_t v = 0;
    for (; *s; s++) {
        unsigned d;
        if (*s >= '0' && *s <= '9')
            d = (unsigned)(*s - '0');
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = (unsigned)(*s - 'a' + 10);
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = (unsigned)(*s - 'A' + 10);
        else
            return false;
        if (v > (UINT64_MAX - d) / base)
            return false;
        v = v * base + d;
    }
    *out = v;
    return true;
}

bool cmdline_get_u64(const struct cmdline *cl, const char *key, uint64_t *out)
{
    return cmdline_parse_u64(cmdline_get(cl, key), out);
}

const char *cmdline_split(const char *s, char sep, char *head, unsigned head_len)
{
    unsigned i = 0;
    if (!s || head_len == 0)
        return 0;
    while (s[i] && s[i] != sep && i < head_len - 1) {
        head[i] = s[i];
        i++;
    }
    head[i] = '\0';
    return s[i] == sep ? s + i + 1 : 0;
}
