// probe-dotnet: what .NET's clocks cost, how fine they step, and whether they hold across CPUs
// (issue 36; the command line, info/cost/steps/path/stamp/cross/threads, is shared by every
// language's probe and run by clockbench-os). Built by Mono's mcs; runs under mono, or under
// CoreCLR's dotnet where that is installed (`info` says which ran it).
//
// C# cannot read the TSC, so a call's cost is measured the batch way: about 1000 back-to-back
// calls timed by Stopwatch.GetTimestamp, after a warm-up for the JIT (CoreCLR's tiers); the
// median batch's ns per call is reported. Steps are the differences between n back-to-back reads.
// The claim beside them is Stopwatch.Frequency (Mono: 10 MHz ticks, CoreCLR on Linux: 1 GHz).
// A .NET thread cannot pin itself without native calls, so `cross` asks the runner to
// ("pin <tid> <cpu>" on stdout, "ok" or "no <reason>" back on stdin), and so does `threads`, whose
// threads time their calls in chunks by Stopwatch.GetTimestamp and read their involuntary context
// switches from /proc/thread-self/status (no thread CPU time without native calls: run_ns is "-").
//
// `serve` runs many commands in one runtime (docs/output.md, "Language probes: the contract"):
// each line of stdin goes through the same Run() as the command line. stdin has one reader: a
// background thread reading one TextReader into a queue, from which serve's commands, stamp's
// lines and cross's pin answers are all taken (a second reader would buffer what the first one
// needs; the thread lets a wait for a pin answer be bounded).
//
// Mono 5 and later, .NET 6 and later (issue 48): C# 6 and the .NET Framework 4.5 library only.

using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.Globalization;
using System.IO;
using System.Reflection;
using System.Text;
using System.Threading;

static class Probe
{
    static readonly string[] Apis = { "Stopwatch.GetTimestamp", "DateTime.UtcNow" };
    const int BatchCalls = 1000;
    const int MinWarmupCalls = 200000; // enough for CoreCLR's final tier to take the loops...
    const long MaxWarmupMs = 500;      // ...unless that takes longer (a syscall a call under TCG)
    const int MaxN = 10000000;
    const int WaitMs = 60000;
    const long UnixEpochTicks = 621355968000000000; // DateTime(1970, 1, 1).Ticks
    const int MaxBudgetMs = 3600000; // an hour
    const int CheckEvery = 1024;     // a steps read is one call: the budget is looked at once every CheckEvery
    const string Usage = "usage: mono Probe.exe info | cost API N [BUDGET_MS] | steps API N [BUDGET_MS] | path API N"
        + " | stamp API | cross API CPU_A CPU_B ROUNDS [BUDGET_MS] | threads API K N [CPUS [BUDGET_MS]] | serve";
    static readonly TextWriter Out = new StreamWriter(Console.OpenStandardOutput(), new UTF8Encoding(false));
    static long sink; // where measured values go, so that no read is optimised away

    static void Fail(string message, int status)
    {
        byte[] line = Encoding.ASCII.GetBytes("probe-dotnet: " + message + "\n");
        using (Stream err = Console.OpenStandardError())
            err.Write(line, 0, line.Length);
        Environment.Exit(status);
    }

    static void Say(string line)
    {
        Out.Write(line + "\n");
        Out.Flush();
    }

    static string Fmt(double x)
    {
        double r = Math.Round(x * 1000.0) / 1000.0;
        if (r == Math.Floor(r) && Math.Abs(r) < 9e15)
            return ((long)r).ToString(CultureInfo.InvariantCulture);
        return r.ToString("0.###", CultureInfo.InvariantCulture);
    }

    static int ApiOf(string name)
    {
        int api = Array.IndexOf(Apis, name);
        if (api < 0)
            Fail("unknown API '" + name + "': want one of " + string.Join(" ", Apis), 64);
        return api;
    }

    static int Number(string text, string what, int lo, int hi)
    {
        long v = -1;
        if (text.Length >= 1 && text.Length <= 12 && text.TrimStart("0123456789".ToCharArray()).Length == 0)
            v = long.Parse(text, CultureInfo.InvariantCulture);
        if (v < lo || v > hi)
            Fail("bad " + what + " '" + text + "': want an integer from " + lo + " to " + hi, 64);
        return (int)v;
    }

    // The optional bound on the whole of a command (cost, steps, cross, threads: docs/output.md,
    // "Language probes: the contract"): its deadline is ms after the command starts, on
    // Stopwatch.GetTimestamp. Without one (Ms 0) the command runs as it always did and its line
    // has no budget fields.
    sealed class Budget
    {
        public readonly int Ms;
        public readonly long Start, End;

        public Budget(int ms)
        {
            Ms = ms;
            Start = Stopwatch.GetTimestamp();
            End = Start + ms * Stopwatch.Frequency / 1000;
        }

        public bool Over() { return Ms > 0 && Stopwatch.GetTimestamp() >= End; }

        public bool OverAt(long t) { return Ms > 0 && t >= End; }

        // the warm-up's share: until half the budget has gone
        public long Half { get { return Start + (End - Start) / 2; } }

        // what the line ends with: nothing, or " budget_ms=B cut=0|1"
        public string Suffix(bool cut)
        {
            return Ms > 0 ? " budget_ms=" + Ms + " cut=" + (cut ? 1 : 0) : "";
        }
    }

    static readonly Budget NoBudget = new Budget(0);

    // ns per unit of Read()'s value
    static double UnitNs(int api)
    {
        return api == 0 ? 1e9 / Stopwatch.Frequency : 100.0;
    }

    // One read on the API's own scale: Stopwatch ticks, or DateTime's 100 ns ticks since 0001.
    static long Read(int api)
    {
        return api == 0 ? Stopwatch.GetTimestamp() : DateTime.UtcNow.Ticks;
    }

    // count back-to-back calls; one loop per API so that nothing but the call sits in the loop
    static long Batch(int api, int count)
    {
        long acc = 0;
        if (api == 0)
            for (int i = 0; i < count; i++) acc += Stopwatch.GetTimestamp();
        else
            for (int i = 0; i < count; i++) acc += DateTime.UtcNow.Ticks;
        return acc;
    }

    static void Fill(int api, long[] v)
    {
        if (api == 0)
            for (int i = 0; i < v.Length; i++) v[i] = Stopwatch.GetTimestamp();
        else
            for (int i = 0; i < v.Length; i++) v[i] = DateTime.UtcNow.Ticks;
    }

    // at least `calls` calls, then on to MinWarmupCalls for the JIT while within MaxWarmupMs;
    // with a budget, never past half of it (once some calls are made)
    static bool Warming(int done, int calls, long start, Budget budget)
    {
        long limit = MaxWarmupMs * Stopwatch.Frequency / 1000, now = Stopwatch.GetTimestamp();
        if (budget.Ms > 0 && done > 0 && now >= budget.Half)
            return false;
        return done < calls || (done < MinWarmupCalls && now - start < limit);
    }

    static void WarmUp(int api, int calls, Budget budget)
    {
        long acc = 0, start = Stopwatch.GetTimestamp();
        for (int done = 0; Warming(done, calls, start, budget); done += BatchCalls)
            acc += Batch(api, BatchCalls);
        Interlocked.Add(ref sink, acc);
    }

    static double TicksToNs(long ticks)
    {
        return ticks * 1e9 / Stopwatch.Frequency;
    }

    static void Cost(int api, int n, Budget budget)
    {
        int size = Math.Min(n, BatchCalls), asked = n / size, batches = asked;
        WarmUp(api, n, budget);
        double[] perCall = new double[batches];
        double total = 0;
        for (int b = 0; b < asked; b++) {
            long t0 = Stopwatch.GetTimestamp();
            long acc = Batch(api, size);
            long t1 = Stopwatch.GetTimestamp();
            sink += acc;
            perCall[b] = TicksToNs(t1 - t0) / size;
            total += perCall[b];
            if (b + 1 < asked && budget.OverAt(t1)) {
                batches = b + 1;
                Array.Resize(ref perCall, batches);
                break;
            }
        }
        Array.Sort(perCall);
        int mid = batches / 2;
        double p50 = batches % 2 == 1 ? perCall[mid] : (perCall[mid - 1] + perCall[mid]) / 2;
        // the median's 95% interval by order statistics: ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped
        double w = 0.98 * Math.Sqrt(batches);
        int lo = (int)Math.Max(0, Math.Floor(batches / 2.0 - w)), hi = (int)Math.Min(batches - 1, Math.Ceiling(batches / 2.0 + w));
        Say("cost " + Apis[api] + " method=batch unit=ns n=" + (long)batches * size + " batch=" + size
            + " min=" + Fmt(perCall[0]) + " p50=" + Fmt(p50) + " mean=" + Fmt(total / batches)
            + " max=" + Fmt(perCall[batches - 1]) + " timer=Stopwatch.GetTimestamp p50_lo=" + Fmt(perCall[lo]) + " p50_hi=" + Fmt(perCall[hi])
            + budget.Suffix(batches < asked));
    }

    // With a budget, the reads are made CheckEvery at a time and the deadline looked at between
    // them; the step across a look (read i-1 to i, i a multiple of CheckEvery) is not counted.
    static void Steps(int api, int n, Budget budget)
    {
        if (n < 2)
            Fail("bad n '" + n + "': steps needs at least 2 reads", 64);
        long[] v = new long[budget.Ms > 0 ? Math.Min(n, CheckEvery) : n];
        long start = Stopwatch.GetTimestamp();
        for (int warmed = 0; Warming(warmed, n, start, budget); warmed += v.Length)
            Fill(api, v); // warm-up: the JIT's final tier compiles the loop before the reads that count
        int done = n;
        if (budget.Ms == 0) {
            Fill(api, v);
        } else {
            // blocks of reads, each its own array: one of n (80 MB for the largest) is not made
            // before the first read
            List<long[]> blocks = new List<long[]>();
            for (int at = 0; at < n; at += CheckEvery) {
                long[] block = new long[Math.Min(CheckEvery, n - at)];
                Fill(api, block);
                blocks.Add(block);
                if (at + block.Length < n && budget.Over()) {
                    done = at + block.Length;
                    break;
                }
            }
            v = new long[done];
            for (int b = 0; b < blocks.Count; b++)
                Array.Copy(blocks[b], 0, v, b * CheckEvery, blocks[b].Length);
        }
        double unit = UnitNs(api), maxBack = 0, least = -1;
        long zero = 0, backward = 0;
        SortedDictionary<double, long> bins = new SortedDictionary<double, long>();
        for (int i = 1; i < done; i++) {
            if (budget.Ms > 0 && i % CheckEvery == 0)
                continue; // the deadline's look sits in this step
            double s = (v[i] - v[i - 1]) * unit;
            if (s < 0) {
                backward++;
                maxBack = Math.Max(maxBack, -s);
                continue;
            }
            double upper = 0;
            if (s == 0) {
                zero++;
            } else {
                least = least < 0 ? s : Math.Min(least, s);
                for (upper = 1; upper < s; upper *= 2) {
                }
            }
            long count;
            bins.TryGetValue(upper, out count);
            bins[upper] = count + 1;
        }
        StringBuilder hist = new StringBuilder();
        foreach (KeyValuePair<double, long> e in bins)
            hist.Append(hist.Length > 0 ? "," : "").Append(Fmt(e.Key)).Append(':').Append(e.Value);
        Say("steps " + Apis[api] + " n=" + done + " least_ns=" + (least < 0 ? "none" : Fmt(least)) + " zero=" + zero
            + " backward=" + backward + " max_backward_ns=" + Fmt(maxBack) + " hist=" + hist + budget.Suffix(done < n));
    }

    // a raw stream, written once and flushed: each marker is one write(2)
    static Stream pathErr;

    static void PathMarked(int api, int n)
    {
        if (pathErr == null)
            pathErr = Console.OpenStandardError();
        Stream err = pathErr;
        byte[] begin = Encoding.ASCII.GetBytes("cb-path-begin\n"), end = Encoding.ASCII.GetBytes("cb-path-end\n");
        // compiled and loaded before the window (Stopwatch's System.dll, the stream's Flush):
        // the window then holds the calls' own system calls only
        WarmUp(api, n, NoBudget);
        err.Flush();
        err.Write(begin, 0, begin.Length);
        err.Flush();
        long acc = Batch(api, n);
        err.Write(end, 0, end.Length);
        err.Flush();
        sink = acc;
    }

    // The value on the clock's own scale and origin, as an integer in ns.
    static string StampValue(int api)
    {
        long v = Read(api);
        if (api == 1)
            return ((v - UnixEpochTicks) * 100).ToString(CultureInfo.InvariantCulture);
        long f = Stopwatch.Frequency; // whole seconds and the rest apart: ticks * 1e9 would overflow
        return (v / f * 1000000000L + v % f * 1000000000L / f).ToString(CultureInfo.InvariantCulture);
    }

    // a value per line read; alone until end of input, within serve until a line cb-end
    static void Stamp(int api, bool serving)
    {
        for (string line; (line = NextLine()) != null && !(serving && line == "cb-end");)
            Say(StampValue(api));
    }

    static string ThreadId()
    {
        try {
            return File.ReadAllText("/proc/thread-self/stat").Split(' ')[0];
        } catch (Exception) {
            return null;
        }
    }

    // The one reader of stdin: a background thread puts its lines in a queue, then null (end of
    // input) for good.
    static readonly Queue<string> stdinLines = new Queue<string>();
    static Thread stdinReader;
    static int staleReplies; // pin answers still to come for pin requests whose wait timed out

    static void StartStdinReader()
    {
        if (stdinReader != null)
            return;
        stdinReader = new Thread(() => {
            TextReader input = new StreamReader(Console.OpenStandardInput(), Encoding.ASCII);
            for (;;) {
                string line;
                try {
                    line = input.ReadLine();
                } catch (IOException) {
                    line = null;
                }
                lock (stdinLines) {
                    stdinLines.Enqueue(line);
                    Monitor.PulseAll(stdinLines);
                }
                if (line == null)
                    return;
            }
        });
        stdinReader.IsBackground = true;
        stdinReader.Start();
    }

    // The next line within timeoutMs (< 0: no bound), null at end of input; ended is false when
    // the wait timed out. A late pin answer ("ok", "no ...") is passed over: it belongs to a
    // request already given up.
    static string NextLine(int timeoutMs, out bool ended)
    {
        StartStdinReader();
        DateTime deadline = DateTime.UtcNow.AddMilliseconds(timeoutMs);
        lock (stdinLines) {
            for (;;) {
                while (stdinLines.Count == 0) {
                    int left = timeoutMs < 0 ? Timeout.Infinite
                        : (int)Math.Max(0, (deadline - DateTime.UtcNow).TotalMilliseconds);
                    if (left == 0 || !Monitor.Wait(stdinLines, left)) {
                        ended = false;
                        return null;
                    }
                }
                string line = stdinLines.Peek();
                ended = line == null;
                if (ended)
                    return null; // end of input stays queued for whoever reads next
                stdinLines.Dequeue();
                if (staleReplies > 0 && (line == "ok" || line.StartsWith("no ", StringComparison.Ordinal))) {
                    staleReplies--;
                    continue;
                }
                return line;
            }
        }
    }

    // the next line, or null at end of input
    static string NextLine()
    {
        bool ended;
        return NextLine(-1, out ended);
    }

    // Asks the runner to pin tid to cpu; true when it answered "ok" within 10 s.
    static bool RequestPin(string tid, int cpu)
    {
        if (tid == null)
            return false;
        Say("pin " + tid + " " + cpu);
        bool ended;
        string reply = NextLine(10000, out ended);
        if (reply == null && !ended)
            staleReplies++;
        return reply == "ok";
    }

    static long seq;      // release-stored by the writer after t1, acquire-loaded by the reader
    static long sharedT1;

    // With a budget, a round's wait is bounded by the time left as well as by 1 s, and no round
    // starts past the deadline: the rounds done are those whose reader saw the value or gave it up
    // after 1 s (lost); the rest are not done, and not lost.
    static void Cross(int api, int cpuA, int cpuB, int rounds, Budget budget)
    {
        long[] lost = new long[2], violations = new long[2], done = new long[2];
        double[] maxViolation = new double[2];
        string[] tids = new string[2];
        double unit = UnitNs(api);
        long roundTicks = Stopwatch.Frequency; // 1 s
        CountdownEvent started = new CountdownEvent(2);
        ManualResetEvent go = new ManualResetEvent(false);
        Thread[] sides = new Thread[2];
        WarmUp(api, rounds, budget);
        for (int side = 0; side < 2; side++) {
            int me = side;
            sides[me] = new Thread(() => {
                tids[me] = ThreadId();
                started.Signal();
                if (!go.WaitOne(WaitMs))
                    return;
                for (int r = 0; r < rounds; r++) {
                    if (r % 2 == me) { // writer: a->b on even rounds, b->a on odd
                        sharedT1 = Read(api);
                        Volatile.Write(ref seq, r + 1);
                        continue;
                    }
                    long begin = Stopwatch.GetTimestamp();
                    if (budget.OverAt(begin))
                        break;
                    long deadline = begin + roundTicks;
                    if (budget.Ms > 0 && budget.End < deadline)
                        deadline = budget.End;
                    bool seen = true;
                    while (Volatile.Read(ref seq) < r + 1) {
                        if (Stopwatch.GetTimestamp() > deadline) {
                            seen = false;
                            break;
                        }
                    }
                    if (!seen && budget.Over())
                        break; // the budget's end, not the round's second
                    done[me]++;
                    if (!seen) {
                        lost[me]++;
                        continue;
                    }
                    long a = sharedT1, b = Read(api);
                    if (b < a) {
                        violations[me]++;
                        maxViolation[me] = Math.Max(maxViolation[me], (a - b) * unit);
                    }
                }
            });
            sides[me].Start();
        }
        if (!started.Wait(WaitMs))
            Fail("cross: the threads did not start within " + WaitMs / 1000 + " s", 1);
        // a budget gone before the threads are up (a starved CPU at nice 19): no pins asked for, and
        // the threads, let go, find it gone at their first round
        bool pinned = !budget.Over() && RequestPin(tids[0], cpuA);
        pinned &= !budget.Over() && RequestPin(tids[1], cpuB);
        go.Set();
        long bound = budget.Ms > 0 ? Math.Min(rounds * 1000L, budget.Ms) : rounds * 1000L;
        foreach (Thread t in sides)
            if (!t.Join((int)Math.Min(int.MaxValue, bound + WaitMs)))
                Fail("cross: a thread did not finish in time", 1);
        long roundsDone = budget.Ms > 0 ? done[0] + done[1] : rounds;
        Say("cross " + Apis[api] + " a=" + cpuA + " b=" + cpuB + " rounds=" + roundsDone
            + " violations=" + (violations[0] + violations[1])
            + " max_violation_ns=" + Fmt(Math.Max(maxViolation[0], maxViolation[1]))
            + " lost=" + (lost[0] + lost[1]) + " pinned=" + (pinned ? "requested" : "no")
            + budget.Suffix(roundsDone < rounds));
    }

    // Linux's CPU list format ("0-3,8"), or exit 64.
    static int[] ParseCpus(string text)
    {
        List<int> cpus = new List<int>();
        foreach (string part in text.Split(',')) {
            int dash = part.IndexOf('-');
            int lo = Number(dash < 0 ? part : part.Substring(0, dash), "cpus", 0, 4095);
            int hi = dash < 0 ? lo : Number(part.Substring(dash + 1), "cpus", lo, 4095);
            for (int c = lo; c <= hi && cpus.Count < 1024; c++)
                cpus.Add(c);
        }
        return cpus.ToArray();
    }

    // This thread's involuntary context switches, -1 where /proc cannot say.
    static long InvoluntarySwitches()
    {
        try {
            foreach (string line in File.ReadAllLines("/proc/thread-self/status"))
                if (line.StartsWith("nonvoluntary_ctxt_switches:", StringComparison.Ordinal))
                    return long.Parse(line.Substring(27).Trim(), CultureInfo.InvariantCulture);
        } catch (Exception) {
            // not known
        }
        return -1;
    }

    static string Known(long v)
    {
        return v < 0 ? "-" : v.ToString(CultureInfo.InvariantCulture);
    }

    // With a budget, each thread looks at the deadline after each chunk (the chunk's own end, read
    // anyway) and stops there when it has passed: at least one chunk each.
    static void Threads(int api, int k, int n, int[] cpus, Budget budget)
    {
        // chunks of about 1000 calls, at least 20 of them: the least is what an idle CPU shows
        int chunk = Math.Max(1, Math.Min(1000, n / 20)), chunks = n / chunk, rest = n % chunk;
        long[] elapsed = new long[k], switches = new long[k], calls = new long[k];
        double[] least = new double[k], median = new double[k];
        string[] tids = new string[k];
        CountdownEvent ready = new CountdownEvent(k);
        ManualResetEvent go = new ManualResetEvent(false);
        Thread[] workers = new Thread[k];
        for (int w = 0; w < k; w++) {
            int me = w;
            workers[me] = new Thread(() => {
                tids[me] = ThreadId();
                WarmUp(api, n, budget);
                long[] d = new long[chunks];
                ready.Signal();
                if (!go.WaitOne(WaitMs))
                    return;
                long sw0 = InvoluntarySwitches();
                long t0 = Stopwatch.GetTimestamp(), prev = t0, acc = 0;
                int c = 0;
                while (c < chunks) {
                    acc += Batch(api, chunk);
                    long now = Stopwatch.GetTimestamp();
                    d[c++] = now - prev;
                    prev = now;
                    if (c < chunks && budget.OverAt(now))
                        break;
                }
                calls[me] = (long)c * chunk;
                if (c == chunks) {
                    acc += Batch(api, rest);
                    calls[me] = n;
                }
                long t1 = Stopwatch.GetTimestamp();
                long sw1 = InvoluntarySwitches();
                Interlocked.Add(ref sink, acc);
                Array.Resize(ref d, c);
                Array.Sort(d);
                least[me] = TicksToNs(d[0]) / chunk;
                median[me] = TicksToNs(d[c / 2]) / chunk;
                switches[me] = sw0 < 0 || sw1 < 0 ? -1 : sw1 - sw0;
                elapsed[me] = Math.Max(1, t1 - t0);
            });
            workers[me].Start();
        }
        if (!ready.Wait(2 * WaitMs))
            Fail("threads: the workers were not ready within " + 2 * WaitMs / 1000 + " s", 1);
        bool pinned = cpus.Length > 0;
        long[] on = new long[k];
        for (int w = 0; w < k; w++) {
            on[w] = -1;
            if (cpus.Length > 0 && RequestPin(tids[w], cpus[w % cpus.Length]))
                on[w] = cpus[w % cpus.Length];
            else
                pinned = false;
        }
        go.Set(); // the common start
        double sum = 0, max = 0;
        bool cut = false;
        StringBuilder cpu = new StringBuilder(), lo = new StringBuilder(), mid = new StringBuilder(),
            wall = new StringBuilder(), run = new StringBuilder(), sw = new StringBuilder(), made = new StringBuilder();
        for (int w = 0; w < k; w++) {
            if (!workers[w].Join(2 * WaitMs + budget.Ms) || elapsed[w] == 0)
                Fail("threads: a worker did not finish in time", 1);
            double perCall = TicksToNs(elapsed[w]) / calls[w];
            cut |= calls[w] < n;
            sum += perCall;
            max = Math.Max(max, perCall);
            string sep = w > 0 ? "," : "";
            cpu.Append(sep).Append(Known(on[w]));
            lo.Append(sep).Append(Fmt(least[w]));
            mid.Append(sep).Append(Fmt(median[w]));
            wall.Append(sep).Append(Known((long)Math.Round(TicksToNs(elapsed[w]))));
            run.Append(sep).Append("-");
            sw.Append(sep).Append(Known(switches[w]));
            made.Append(sep).Append(calls[w].ToString(CultureInfo.InvariantCulture));
        }
        Say("threads " + Apis[api] + " k=" + k + " n=" + n + " per_call_ns=" + Fmt(sum / k)
            + " max_per_call_ns=" + Fmt(max) + " chunk=" + chunk + " pinned=" + (pinned ? "requested" : "no")
            + " cpu=" + cpu + " least_ns=" + lo + " median_ns=" + mid + " wall_ns=" + wall + " run_ns=" + run
            + " nivcsw=" + sw + (budget.Ms > 0 ? " done=" + made : "") + budget.Suffix(cut));
    }

    // Mono names itself through Mono.Runtime.GetDisplayName (internal: reflection); CoreCLR
    // through RuntimeInformation, looked up the same way so that one source builds for both.
    static string RuntimeName()
    {
        Type mono = Type.GetType("Mono.Runtime");
        if (mono != null) {
            MethodInfo name = mono.GetMethod("GetDisplayName", BindingFlags.NonPublic | BindingFlags.Static);
            if (name != null)
                return "Mono " + name.Invoke(null, null);
            return "Mono (version not stated)";
        }
        Type info = Type.GetType("System.Runtime.InteropServices.RuntimeInformation")
            ?? Type.GetType("System.Runtime.InteropServices.RuntimeInformation, "
                + "System.Runtime.InteropServices.RuntimeInformation");
        PropertyInfo description = info == null ? null : info.GetProperty("FrameworkDescription");
        if (description != null)
            return description.GetValue(null, null) + " (CoreCLR)";
        return ".NET " + Environment.Version + " (runtime not named)";
    }

    static void Info()
    {
        Say("runtime " + RuntimeName());
        Say("api Stopwatch.GetTimestamp claim_ns=" + Fmt(1e9 / Stopwatch.Frequency) + " origin=clock"
            + " claim_source=Stopwatch.Frequency = " + Stopwatch.Frequency.ToString(CultureInfo.InvariantCulture));
        Say("api DateTime.UtcNow claim_ns=none origin=clock claim_source=none stated");
    }

    // Each line of stdin one command, run as alone, its answer followed by cb-served.
    static void Serve()
    {
        for (string line; (line = NextLine()) != null;) {
            if (line.Length == 0)
                continue;
            Run(line.Split(' '), true);
            Say("cb-served");
        }
    }

    static readonly Dictionary<string, int> Shapes = new Dictionary<string, int> {
        { "info", 0 }, { "cost", 2 }, { "steps", 2 }, { "path", 2 },
        { "stamp", 1 }, { "cross", 4 }, { "threads", 3 }, { "serve", 0 },
    };

    // One command, from the command line or a line of serve: the one dispatcher of both.
    static void Run(string[] argv, bool serving)
    {
        if (argv.Length == 0)
            Fail(Usage, 64);
        string cmd = argv[0];
        int want;
        if (!Shapes.TryGetValue(cmd, out want))
            Fail("unknown command '" + cmd + "'; " + Usage, 64);
        // words beyond: budget_ms on cost, steps and cross; threads' CPU list (without it its
        // threads are not pinned), then budget_ms
        int optional = cmd == "threads" ? 2 : cmd == "cost" || cmd == "steps" || cmd == "cross" ? 1 : 0;
        if (argv.Length - 1 < want || argv.Length - 1 > want + optional)
            Fail(cmd + " takes " + want + " arguments; " + Usage, 64);
        if (cmd == "serve") {
            if (serving)
                Fail("serve: already serving", 64);
            Serve();
            return;
        }
        if (cmd == "info") {
            Info();
            return;
        }
        int api = ApiOf(argv[1]);
        switch (cmd) {
        case "cost": {
            int n = Number(argv[2], "n", 1, MaxN);
            Cost(api, n, BudgetAt(argv, 3));
            break;
        }
        case "steps": {
            int n = Number(argv[2], "n", 1, MaxN);
            Steps(api, n, BudgetAt(argv, 3));
            break;
        }
        case "path": PathMarked(api, Number(argv[2], "n", 1, MaxN)); break;
        case "stamp": Stamp(api, serving); break;
        case "threads": {
            int k = Number(argv[2], "k", 1, 1024), n = Number(argv[3], "n", 1, MaxN);
            int[] cpus = argv.Length >= 5 ? ParseCpus(argv[4]) : new int[0];
            Threads(api, k, n, cpus, BudgetAt(argv, 5));
            break;
        }
        default: {
            int a = Number(argv[2], "cpu_a", 0, 4095), b = Number(argv[3], "cpu_b", 0, 4095);
            int rounds = Number(argv[4], "rounds", 1, MaxN);
            Cross(api, a, b, rounds, BudgetAt(argv, 5));
            break;
        }
        }
    }

    // budget_ms where the command has it (argv[i]), else none
    static Budget BudgetAt(string[] argv, int i)
    {
        return argv.Length > i ? new Budget(Number(argv[i], "budget_ms", 1, MaxBudgetMs)) : NoBudget;
    }

    static int Main(string[] argv)
    {
        Run(argv, false);
        return 0;
    }
}
