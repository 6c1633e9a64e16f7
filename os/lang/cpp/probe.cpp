// The C++ clocks (std::chrono::steady_clock, system_clock, high_resolution_clock)
// as a program sees them, run by clockbench-os (the language probes of issue 36,
// one command line for all). One source, built twice: with libstdc++ (g++) and with
// libc++ (clang++ -stdlib=libc++). Each clock is a template argument, so every
// call is inlined into the measuring loop: no function pointer of ours sits in a
// bracket. What now() does inside the library (the vDSO, a syscall) is measured.
//
// cost:  each call alone between serialised TSC reads (lfence;rdtsc;lfence
//        before, lfence;rdtsc after: the pair clockbench-os uses, drivers/cpu.h),
//        an empty bracket measured beside every call and its median subtracted;
//        exact percentiles (nearest rank) over the n samples.
// steps: n back-to-back now(), the differences in ns through duration_cast.
// threads: each of k threads pinned to a CPU of the list given (sched_setaffinity
//        of the calling thread), its n calls timed by steady_clock in chunks; per
//        thread the least and median chunk's cost per call, its wall time, its CPU
//        time (CLOCK_THREAD_CPUTIME_ID) and its involuntary context switches
//        (getrusage RUSAGE_THREAD) over the loop.
// path, stamp, cross: as the contract says.
// serve: one command a line on stdin, each through the same dispatcher as the
//        command line (dispatch), its answer and `cb-served` flushed together.
#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#if defined(_LIBCPP_VERSION)
static const char PROG[] = "probe-cpp-libcxx";
#else
static const char PROG[] = "probe-cpp-libstdcxx";
#endif

namespace chr = std::chrono;

static const uint64_t MAX_N = 10000000;   // 160 MB of samples at most
static const uint64_t MAX_THREADS = 1024;
static const uint64_t MAX_ROUNDS = 10000000;
static const uint64_t MAX_BUDGET_MS = 3600000; // an hour
// A unit that is one call (a cost sample, a steps read) is checked against the
// budget once every CHECK_EVERY units, never inside a measured bracket.
static const uint64_t CHECK_EVERY = 1024;
// Longer than any command (the longest is cross's, about 50 bytes): a line
// beyond it is refused rather than gathered without bound.
static const size_t MAX_LINE = 1024;

[[noreturn]] static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "%s: ", PROG);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
    va_end(ap);
    std::exit(64);
}

// A whole decimal number in [lo, hi], or exit 64.
static uint64_t parse_u64(const char *s, const char *what, uint64_t lo, uint64_t hi)
{
    uint64_t v = 0;
    if (!*s)
        fail("bad %s '': not a number", what);
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - 9) / 10)
            fail("bad %s '%s': not a whole number", what, s);
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v < lo || v > hi)
        fail("bad %s '%s': must be %" PRIu64 "..%" PRIu64, what, s, lo, hi);
    return v;
}

// The two halves joined inside the asm, so that the compiler has no shift or
// OR of its own to schedule into the next bracket.
static inline uint64_t tsc_begin()
{
    uint64_t t;
    __asm__ volatile("lfence; rdtsc; lfence; shl $32, %%rdx; or %%rdx, %%rax" : "=a"(t)::"rdx", "memory");
    return t;
}

static inline uint64_t tsc_end()
{
    uint64_t t;
    __asm__ volatile("lfence; rdtsc; shl $32, %%rdx; or %%rdx, %%rax" : "=a"(t)::"rdx", "memory");
    return t;
}

// Keeps a value live without storing it anywhere.
template <class T> static inline void keep(T v)
{
    __asm__ volatile("" ::"r"(v));
}

template <class Clock> static inline int64_t now_ns()
{
    return chr::duration_cast<chr::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Nearest rank, rank = ceil(p * n), as lib/stats.c does.
// The median's 95% interval by order statistics (docs/output.md, "cost"): the sorted samples at
// ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped: distribution-free, as the median is.
static size_t ci_lo(size_t n) { double r = std::floor(n / 2.0 - 0.98 * std::sqrt((double)n)); return r < 0 ? 0 : (size_t)r; }
static size_t ci_hi(size_t n) { double r = std::ceil(n / 2.0 + 0.98 * std::sqrt((double)n)); return r > n - 1.0 ? n - 1 : (size_t)r; }

static uint64_t percentile(const std::vector<uint64_t> &sorted, unsigned per_mille)
{
    size_t n = sorted.size();
    size_t rank = (size_t)(((uint64_t)per_mille * n + 999) / 1000);
    return sorted[std::min(std::max(rank, (size_t)1), n) - 1];
}

static uint64_t minus(uint64_t v, uint64_t bracket) { return v > bracket ? v - bracket : 0; }

// The optional bound on the whole of a command (cost, steps, cross, threads:
// docs/output.md, "Language probes: the contract"): its deadline is ms after
// the command starts, on steady_clock. Without one (ms 0) the command runs as
// it always did and its line has no budget fields.
struct Budget {
    uint64_t ms = 0;
    chr::steady_clock::time_point end;
    explicit Budget(uint64_t ms_) : ms(ms_), end(chr::steady_clock::now() + chr::milliseconds(ms_)) {}
    bool over() const { return ms && chr::steady_clock::now() >= end; }
    bool over_at(chr::steady_clock::time_point t) const { return ms && t >= end; }
    // what the line ends with: nothing, or " budget_ms=B cut=0|1"
    std::string suffix(bool cut) const
    {
        return ms ? " budget_ms=" + std::to_string(ms) + " cut=" + (cut ? "1" : "0") : "";
    }
};

// One line of stdin without its '\n' (a last line may lack it). stdio
// gathers it across as many read(2)s as the pipe hands over. A line beyond
// MAX_LINE is too_long, its rest left unread.
enum class Line { ok, too_long, eof };

static Line read_line(std::string &s)
{
    s.clear();
    int c;
    while ((c = std::getchar()) != EOF && c != '\n') {
        if (s.size() == MAX_LINE)
            return Line::too_long;
        s += (char)c;
    }
    return c == EOF && s.empty() ? Line::eof : Line::ok;
}

static void skip_line()
{
    for (int c = std::getchar(); c != EOF && c != '\n'; c = std::getchar())
        ;
}

static void flush_or_exit()
{
    if (std::fflush(stdout) != 0)
        std::exit(1);
}

template <class Clock> static void cmd_info_line(const char *api)
{
    using P = typename Clock::period;
    std::printf("api %s claim_ns=%.9g origin=clock claim_source=std::chrono::%s::period = %jd/%jd s (is_steady = %s)\n",
                api, 1e9 * (double)P::num / (double)P::den, api, (intmax_t)P::num, (intmax_t)P::den,
                Clock::is_steady ? "true" : "false");
}

static void cmd_info()
{
#if defined(_LIBCPP_VERSION)
    int v = _LIBCPP_VERSION; // 14000 up to libc++ 15, 160000 from 16
    std::printf("runtime libc++ %d (_LIBCPP_VERSION %d, compiler %s)\n", v >= 100000 ? v / 10000 : v / 1000, v,
                __VERSION__);
#else
    std::printf("runtime libstdc++ (GCC %s, __GLIBCXX__ %d)\n", __VERSION__, (int)__GLIBCXX__);
#endif
    cmd_info_line<chr::steady_clock>("steady_clock");
    cmd_info_line<chr::system_clock>("system_clock");
    cmd_info_line<chr::high_resolution_clock>("high_resolution_clock");
}

template <class Clock> static void cmd_cost(const char *api, uint64_t n, const Budget &budget)
{
    // With a budget, the samples' room is reserved, not written: zeroing 160 MB for the
    // largest n took 0.8 s of a 0.3 s budget here. Each page is touched when its first
    // sample is stored, after that sample's bracket.
    std::vector<uint64_t> full(budget.ms ? 0 : n), empty(budget.ms ? 0 : n);
    if (budget.ms) {
        full.reserve(n);
        empty.reserve(n);
    }
    uint64_t done = n;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t e0 = tsc_begin();
        keep(0);
        uint64_t e1 = tsc_end();
        uint64_t a = tsc_begin();
        auto t = Clock::now();
        uint64_t b = tsc_end();
        keep(t.time_since_epoch().count());
        if (!budget.ms) {
            empty[i] = e1 - e0;
            full[i] = b - a;
            continue;
        }
        empty.push_back(e1 - e0);
        full.push_back(b - a);
        if (i % CHECK_EVERY == CHECK_EVERY - 1 && i + 1 < n && budget.over()) {
            done = i + 1;
            break;
        }
    }
    long double sum = 0;
    for (uint64_t v : full)
        sum += v;
    std::sort(full.begin(), full.end());
    std::sort(empty.begin(), empty.end());
    uint64_t br = percentile(empty, 500);
    long double mean = sum / done - br;
    std::printf("cost %s method=tsc unit=ticks n=%" PRIu64 " min=%" PRIu64 " p50=%" PRIu64 " mean=%.1Lf p99=%" PRIu64
                " p999=%" PRIu64 " max=%" PRIu64 " bracket=%" PRIu64 " p50_lo=%" PRIu64 " p50_hi=%" PRIu64 "%s\n",
                api, done, minus(full.front(), br), minus(percentile(full, 500), br), mean > 0 ? mean : 0.0L,
                minus(percentile(full, 990), br), minus(percentile(full, 999), br), minus(full.back(), br), br,
                minus(full[ci_lo(full.size())], br), minus(full[ci_hi(full.size())], br),
                budget.suffix(done < n).c_str());
}

// With a budget, the deadline is looked at after every CHECK_EVERY-th read;
// the step across that look (read i-1 to i, i a multiple of CHECK_EVERY) holds
// it, and is not counted.
template <class Clock> static void cmd_steps(const char *api, uint64_t n, const Budget &budget)
{
    // with a budget, the reads' room reserved, not written (as cost's)
    std::vector<typename Clock::time_point> v(budget.ms ? 0 : n);
    uint64_t done = n;
    if (!budget.ms) {
        for (uint64_t i = 0; i < n; i++)
            v[i] = Clock::now();
    } else {
        v.reserve(n);
        for (uint64_t i = 0; i < n; i++) {
            v.push_back(Clock::now());
            if (i % CHECK_EVERY == CHECK_EVERY - 1 && i + 1 < n && budget.over()) {
                done = i + 1;
                break;
            }
        }
    }
    std::map<uint64_t, uint64_t> hist; // upper edge in ns -> count; 0: zero steps
    uint64_t least = 0, zero = 0, backward = 0, max_back = 0;
    for (uint64_t i = 1; i < done; i++) {
        if (budget.ms && i % CHECK_EVERY == 0)
            continue; // the deadline's look sits in this step
        int64_t d = chr::duration_cast<chr::nanoseconds>(v[i] - v[i - 1]).count();
        if (d < 0) {
            backward++;
            max_back = std::max(max_back, (uint64_t)-d);
            continue;
        }
        if (d == 0) {
            zero++;
            hist[0]++;
            continue;
        }
        if (!least || (uint64_t)d < least)
            least = (uint64_t)d;
        uint64_t upper = 1;
        while (upper < (uint64_t)d)
            upper <<= 1;
        hist[upper]++;
    }
    std::string h;
    for (auto &b : hist)
        h += (h.empty() ? "" : ",") + std::to_string(b.first) + ":" + std::to_string(b.second);
    std::printf("steps %s n=%" PRIu64 " least_ns=%s zero=%" PRIu64 " backward=%" PRIu64 " max_backward_ns=%" PRIu64
                " hist=%s%s\n",
                api, done, least ? std::to_string(least).c_str() : "none", zero, backward, max_back, h.c_str(),
                budget.suffix(done < n).c_str());
}

static void marker(const char *s)
{
    size_t len = std::strlen(s);
    if (::write(2, s, len) != (ssize_t)len)
        std::exit(1);
}

template <class Clock> static void cmd_path(const char *api, uint64_t n)
{
    marker("cb-path-begin\n");
    for (uint64_t i = 0; i < n; i++)
        keep(Clock::now().time_since_epoch().count());
    marker("cb-path-end\n");
    std::printf("path %s n=%" PRIu64 "\n", api, n);
}

// Alone: every line to EOF is a question. Serving: until a line "cb-end".
template <class Clock> static void cmd_stamp(bool serving)
{
    std::string line;
    for (Line got; (got = read_line(line)) != Line::eof;) {
        if (got == Line::too_long)
            skip_line(); // a line of any length is one question
        else if (serving && line == "cb-end")
            return;
        std::printf("%" PRId64 "\n", (int64_t)now_ns<Clock>());
        flush_or_exit();
    }
}

static bool pin_self(unsigned cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) == 0; // 0: the calling thread
}

// With a budget, a round's wait is bounded by the time left as well as by 1 s, and
// no round starts past the deadline: the rounds done are those whose reader saw the
// value or gave it up after 1 s (lost); the rest are not done, and not lost.
template <class Clock>
static void cmd_cross(const char *api, unsigned cpu_a, unsigned cpu_b, uint64_t rounds, const Budget &budget)
{
    std::atomic<uint64_t> seq{0};
    std::atomic<int64_t> t1{0};
    std::atomic<int> ready{0};
    std::atomic<bool> pin_failed{false};
    uint64_t violations[2] = {0, 0}, lost[2] = {0, 0}, done[2] = {0, 0};
    int64_t max_violation[2] = {0, 0};
    auto body = [&](int me, unsigned cpu) {
        if (!pin_self(cpu))
            pin_failed = true;
        ready++;
        while (ready.load() < 2)
            std::this_thread::yield();
        for (uint64_t r = 0; r < rounds && !pin_failed; r++) {
            if ((int)(r & 1) == me) { // a writes in even rounds, b in odd ones
                t1.store(now_ns<Clock>(), std::memory_order_relaxed);
                seq.store(r + 1, std::memory_order_release);
                continue;
            }
            auto start = chr::steady_clock::now();
            if (budget.over_at(start))
                break;
            auto deadline = start + chr::seconds(1);
            if (budget.ms && budget.end < deadline)
                deadline = budget.end;
            bool seen = true;
            for (uint64_t spin = 1; seq.load(std::memory_order_acquire) < r + 1; spin++) {
                if (spin % 1024 == 0) {
                    if (chr::steady_clock::now() > deadline) {
                        seen = false;
                        break;
                    }
                    std::this_thread::yield(); // lets a writer on the same CPU run
                }
            }
            if (!seen && budget.over())
                break; // the budget's end, not the round's second
            done[me]++;
            if (!seen) {
                lost[me]++;
                continue;
            }
            int64_t t2 = now_ns<Clock>();
            int64_t d = t1.load(std::memory_order_relaxed) - t2;
            if (d > 0) {
                violations[me]++;
                max_violation[me] = std::max(max_violation[me], d);
            }
        }
    };
    std::thread a(body, 0, cpu_a), b(body, 1, cpu_b);
    a.join();
    b.join();
    if (pin_failed)
        fail("cannot pin a thread to cpu %u or %u (sched_setaffinity refused it)", cpu_a, cpu_b);
    uint64_t rounds_done = budget.ms ? done[0] + done[1] : rounds;
    std::printf("cross %s a=%u b=%u rounds=%" PRIu64 " violations=%" PRIu64 " max_violation_ns=%" PRId64
                " lost=%" PRIu64 " pinned=self%s\n",
                api, cpu_a, cpu_b, rounds_done, violations[0] + violations[1],
                std::max(max_violation[0], max_violation[1]), lost[0] + lost[1],
                budget.suffix(rounds_done < rounds).c_str());
}

// Linux's CPU list format ("0-3,8"), or exit 64.
static std::vector<unsigned> parse_cpus(const std::string &text)
{
    std::vector<unsigned> cpus;
    for (size_t at = 0; at <= text.size();) {
        size_t comma = text.find(',', at);
        std::string part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
        size_t dash = part.find('-');
        uint64_t lo = parse_u64(part.substr(0, dash).c_str(), "cpus", 0, CPU_SETSIZE - 1);
        uint64_t hi = dash == std::string::npos ? lo : parse_u64(part.substr(dash + 1).c_str(), "cpus", lo, CPU_SETSIZE - 1);
        for (uint64_t c = lo; c <= hi && cpus.size() < MAX_THREADS; c++)
            cpus.push_back((unsigned)c);
        if (comma == std::string::npos)
            break;
        at = comma + 1;
    }
    return cpus;
}

struct ThreadRun {
    int cpu = -1;           // the CPU it was pinned to, -1 none
    double least = 0, median = 0;
    int64_t wall_ns = 0, run_ns = -1;
    long nivcsw = -1;
    uint64_t done = 0;      // the calls it made
};

static int64_t thread_cpu_ns()
{
    timespec t;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) == 0 ? (int64_t)t.tv_sec * 1000000000 + t.tv_nsec : -1;
}

static long involuntary_switches()
{
    rusage ru;
    return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : -1;
}

// With a budget, each thread looks at the deadline after each chunk (the chunk's own
// end, read anyway) and stops there when it has passed: at least one chunk each.
template <class Clock>
static void cmd_threads(const char *api, uint64_t k, uint64_t n, const std::vector<unsigned> &cpus, const Budget &budget)
{
    // chunks of about 1000 calls, at least 20 of them: the least is what an idle CPU shows
    const uint64_t chunk = std::min<uint64_t>(1000, std::max<uint64_t>(1, n / 20)), chunks = n / chunk, rest = n % chunk;
    std::vector<ThreadRun> runs(k);
    std::atomic<uint64_t> ready{0};
    std::atomic<bool> unpinned{cpus.empty()};
    std::vector<std::thread> pool;
    for (uint64_t t = 0; t < k; t++)
        pool.emplace_back([&, t] {
            ThreadRun &me = runs[t];
            if (!cpus.empty()) {
                unsigned cpu = cpus[t % cpus.size()];
                if (pin_self(cpu))
                    me.cpu = (int)cpu;
                else
                    unpinned = true;
            }
            std::vector<int64_t> d(chunks);
            ready++;
            while (ready.load() < k)
                std::this_thread::yield();
            long sw0 = involuntary_switches();
            int64_t cpu0 = thread_cpu_ns();
            auto t0 = chr::steady_clock::now(), prev = t0;
            uint64_t c = 0;
            while (c < chunks) {
                for (uint64_t i = 0; i < chunk; i++)
                    keep(Clock::now().time_since_epoch().count());
                auto now = chr::steady_clock::now();
                d[c++] = chr::duration_cast<chr::nanoseconds>(now - prev).count();
                prev = now;
                if (c < chunks && budget.over_at(now))
                    break;
            }
            me.done = c * chunk;
            if (c == chunks) {
                for (uint64_t i = 0; i < rest; i++)
                    keep(Clock::now().time_since_epoch().count());
                me.done = n;
            }
            auto t1 = chr::steady_clock::now();
            int64_t cpu1 = thread_cpu_ns();
            long sw1 = involuntary_switches();
            d.resize(c);
            std::sort(d.begin(), d.end());
            me.least = (double)d[0] / (double)chunk;
            me.median = (double)d[c / 2] / (double)chunk;
            me.wall_ns = chr::duration_cast<chr::nanoseconds>(t1 - t0).count();
            me.run_ns = cpu0 >= 0 && cpu1 >= 0 ? cpu1 - cpu0 : -1;
            me.nivcsw = sw0 >= 0 && sw1 >= 0 ? sw1 - sw0 : -1;
        });
    for (auto &th : pool)
        th.join();
    double sum = 0, worst = 0;
    bool cut = false;
    for (const ThreadRun &r : runs) {
        double v = (double)r.wall_ns / (double)r.done;
        cut |= r.done < n;
        sum += v;
        worst = std::max(worst, v);
    }
    std::string cpu, least, median, wall, run, sw, done;
    char b[64];
    for (uint64_t t = 0; t < k; t++) {
        const ThreadRun &r = runs[t];
        const char *sep = t ? "," : "";
        std::snprintf(b, sizeof b, r.cpu < 0 ? "%s-" : "%s%d", sep, r.cpu), cpu += b;
        std::snprintf(b, sizeof b, "%s%.2f", sep, r.least), least += b;
        std::snprintf(b, sizeof b, "%s%.2f", sep, r.median), median += b;
        std::snprintf(b, sizeof b, "%s%" PRId64, sep, r.wall_ns), wall += b;
        std::snprintf(b, sizeof b, r.run_ns < 0 ? "%s-" : "%s%" PRId64, sep, r.run_ns), run += b;
        std::snprintf(b, sizeof b, r.nivcsw < 0 ? "%s-" : "%s%ld", sep, r.nivcsw), sw += b;
        std::snprintf(b, sizeof b, "%s%" PRIu64, sep, r.done), done += b;
    }
    std::printf("threads %s k=%" PRIu64 " n=%" PRIu64 " per_call_ns=%.2f max_per_call_ns=%.2f chunk=%" PRIu64
                " pinned=%s cpu=%s least_ns=%s median_ns=%s wall_ns=%s run_ns=%s nivcsw=%s%s%s\n",
                api, k, n, sum / (double)k, worst, chunk, unpinned ? "no" : "self", cpu.c_str(), least.c_str(), median.c_str(),
                wall.c_str(), run.c_str(), sw.c_str(), budget.ms ? (" done=" + done).c_str() : "",
                budget.suffix(cut).c_str());
}

using Words = std::vector<std::string>;

template <class Clock> static void run(const char *api, const Words &w, bool serving)
{
    const std::string &cmd = w[0];
    auto need = [&](size_t args, const char *usage) {
        if (w.size() != 2 + args)
            fail("usage: %s %s %s", PROG, cmd.c_str(), usage);
    };
    auto num = [&](size_t i, const char *what, uint64_t lo, uint64_t hi) {
        return parse_u64(w[i].c_str(), what, lo, hi);
    };
    // cost, steps, cross and threads take budget_ms as an optional last word
    auto need_budgeted = [&](size_t args, const char *usage) {
        if (w.size() != 2 + args && w.size() != 3 + args)
            fail("usage: %s %s %s [<budget_ms>]", PROG, cmd.c_str(), usage);
    };
    auto budget_at = [&](size_t i) { return w.size() > i ? num(i, "budget_ms", 1, MAX_BUDGET_MS) : 0; };
    if (cmd == "cost") {
        need_budgeted(1, "<api> <n>");
        uint64_t n = num(2, "n", 1, MAX_N);
        cmd_cost<Clock>(api, n, Budget(budget_at(3)));
    } else if (cmd == "steps") {
        need_budgeted(1, "<api> <n>");
        uint64_t n = num(2, "n", 2, MAX_N);
        cmd_steps<Clock>(api, n, Budget(budget_at(3)));
    } else if (cmd == "path") {
        need(1, "<api> <n>");
        cmd_path<Clock>(api, num(2, "n", 1, MAX_N));
    } else if (cmd == "stamp") {
        need(0, "<api>");
        cmd_stamp<Clock>(serving);
    } else if (cmd == "cross") {
        need_budgeted(3, "<api> <cpu_a> <cpu_b> <rounds>");
        unsigned a = (unsigned)num(2, "cpu_a", 0, CPU_SETSIZE - 1), b = (unsigned)num(3, "cpu_b", 0, CPU_SETSIZE - 1);
        uint64_t rounds = num(4, "rounds", 1, MAX_ROUNDS);
        cmd_cross<Clock>(api, a, b, rounds, Budget(budget_at(5)));
    } else if (cmd == "threads") {
        // the CPU list may be left out, but not before a budget
        if (w.size() < 4 || w.size() > 6)
            fail("usage: %s threads <api> <k> <n> [<cpus> [<budget_ms>]]", PROG);
        uint64_t k = num(2, "k", 1, MAX_THREADS), n = num(3, "n", 1, MAX_N);
        std::vector<unsigned> cpus = w.size() >= 5 ? parse_cpus(w[4]) : std::vector<unsigned>();
        cmd_threads<Clock>(api, k, n, cpus, Budget(budget_at(5)));
    }
}

static void serve();

// One command, its words as on the command line (argv[1..]); serving: read
// from serve's stdin, where stamp ends at "cb-end" and serve is no command.
static void dispatch(const Words &w, bool serving)
{
    if (w.empty())
        fail("usage: %s info | cost|steps <api> <n> [<budget_ms>] | path <api> <n> | stamp <api> | "
             "cross <api> <cpu_a> <cpu_b> <rounds> [<budget_ms>] | threads <api> <k> <n> [<cpus> [<budget_ms>]] | serve",
             PROG);
    const std::string &cmd = w[0];
    if (cmd == "info") {
        if (w.size() != 1)
            fail("usage: %s info", PROG);
        cmd_info();
        return;
    }
    if (cmd == "serve") {
        if (serving)
            fail("serve: already serving");
        if (w.size() != 1)
            fail("usage: %s serve", PROG);
        serve();
        return;
    }
    if (cmd != "cost" && cmd != "steps" && cmd != "path" && cmd != "stamp" && cmd != "cross" && cmd != "threads")
        fail("unknown command '%s' (info, cost, steps, path, stamp, cross, threads, serve)", cmd.c_str());
    if (w.size() < 2)
        fail("usage: %s %s <api> ...", PROG, cmd.c_str());
    const std::string &api = w[1];
    if (api == "steady_clock")
        run<chr::steady_clock>("steady_clock", w, serving);
    else if (api == "system_clock")
        run<chr::system_clock>("system_clock", w, serving);
    else if (api == "high_resolution_clock")
        run<chr::high_resolution_clock>("high_resolution_clock", w, serving);
    else
        fail("unknown api '%s' (steady_clock, system_clock, high_resolution_clock)", api.c_str());
}

// Words split at single spaces, as the contract writes them: two spaces make
// an empty word, refused as the command line refuses an empty argument.
static void serve()
{
    std::string line;
    for (Line got; (got = read_line(line)) != Line::eof;) {
        if (got == Line::too_long)
            fail("a command line longer than %zu bytes", MAX_LINE);
        if (line.empty())
            continue;
        Words w;
        for (size_t at = 0;;) {
            size_t sp = line.find(' ', at);
            w.push_back(line.substr(at, sp == std::string::npos ? std::string::npos : sp - at));
            if (sp == std::string::npos)
                break;
            at = sp + 1;
        }
        dispatch(w, true);
        std::fputs("cb-served\n", stdout);
        flush_or_exit();
    }
}

int main(int argc, char **argv)
{
    dispatch(argc > 1 ? Words(argv + 1, argv + argc) : Words(), false);
    return std::fflush(stdout) == 0 ? 0 : 1;
}
