// probe-java: what Java's clocks cost, how fine they step, and whether they hold across CPUs
// (issue 36; the command line, info/cost/steps/path/stamp/cross/threads, is shared by every
// language's probe and run by clockbench-os).
//
// Java cannot read the TSC, so a call's cost is measured the batch way: about 1000 back-to-back
// calls timed by System.nanoTime, after a warm-up that lets the JIT compile the loop; the median
// batch's ns per call is reported. Steps are the differences between n back-to-back reads. Java
// states no resolution for any of its clocks. A Java thread cannot pin itself, so `cross` asks the
// runner to ("pin <tid> <cpu>" on stdout, "ok" or "no <reason>" back on stdin); so does `threads`,
// whose threads each time their calls in chunks by System.nanoTime and read their involuntary
// context switches from /proc/thread-self/status (java.base has no thread CPU time: run_ns is "-").
//
// `serve` runs many commands in one JVM (docs/output.md, "Language probes: the contract"): each
// line of stdin goes through the same run() as the command line. stdin has one reader: a daemon
// thread reading one BufferedReader into a queue, from which serve's commands, stamp's lines and
// cross's pin answers are all taken (a second reader would buffer what the first one needs; the
// thread lets a wait for a pin answer be bounded).
//
// Built for Java 8 (javac --release 8, class file version 52; issue 48): nothing Java 9 added is
// used (cross's reader spins with a Thread.yield every 1024 turns, as the native probes' do, not
// Thread.onSpinWait; seq is a volatile, not setRelease/getAcquire). Before Java 9,
// Instant.now reads System.currentTimeMillis: it is measured all the same, and its claim says so.

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.io.FileInputStream;
import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public final class Probe {
    static final String[] APIS = {"System.nanoTime", "System.currentTimeMillis", "Instant.now"};
    static final long[] UNIT_NS = {1, 1_000_000, 1}; // ns per unit of read()'s value
    static final int BATCH_CALLS = 1000;
    static final int MIN_WARMUP_CALLS = 200_000; // enough for C2 to compile the batch loop...
    static final long MAX_WARMUP_NS = 500_000_000L; // ...unless that takes longer (a syscall a call under TCG)
    static final int MAX_N = 10_000_000;
    static final long ROUND_TIMEOUT_NS = 1_000_000_000L;
    static final long WAIT_S = 60;
    static final int MAX_BUDGET_MS = 3_600_000; // an hour
    static final int CHECK_EVERY = 1024; // a steps read is one call: the budget is looked at once every CHECK_EVERY
    static final String USAGE = "usage: java Probe info | cost API N [BUDGET_MS] | steps API N [BUDGET_MS] | path API N"
            + " | stamp API | cross API CPU_A CPU_B ROUNDS [BUDGET_MS] | threads API K N [CPUS [BUDGET_MS]] | serve";
    static volatile long sink; // where measured values go, so that no read is optimised away

    // Java 8 (java.specification.version "1.8"): Instant.now is Clock.systemUTC's, which reads
    // System.currentTimeMillis; from Java 9 it reads the clock finer (JDK-8068730)
    static boolean instantInMillis() {
        return System.getProperty("java.specification.version", "").startsWith("1.");
    }

    // The optional bound on the whole of a command (cost, steps, cross, threads: docs/output.md,
    // "Language probes: the contract"): its deadline is ms after the command starts, on
    // System.nanoTime. Without one (ms 0) the command runs as it always did and its line has no
    // budget fields. Three longs, {ms, start, end}, not a class of its own: the probe stays the
    // one file Probe.class that the bundle and os-vm carry.
    static final int B_MS = 0, B_START = 1, B_END = 2;

    static long[] budget(int ms) {
        long start = System.nanoTime();
        return new long[] {ms, start, start + ms * 1_000_000L};
    }

    static boolean over(long[] budget) {
        return budget[B_MS] > 0 && System.nanoTime() - budget[B_END] >= 0;
    }

    static boolean overAt(long[] budget, long t) {
        return budget[B_MS] > 0 && t - budget[B_END] >= 0;
    }

    // what the line ends with: nothing, or " budget_ms=B cut=0|1"
    static String suffix(long[] budget, boolean cut) {
        return budget[B_MS] > 0 ? " budget_ms=" + budget[B_MS] + " cut=" + (cut ? 1 : 0) : "";
    }

    static final long[] NO_BUDGET = budget(0);

    static void fail(String message, int status) {
        System.err.println("probe-java: " + message);
        System.err.flush();
        Runtime.getRuntime().halt(status);
    }

    static void say(String line) {
        System.out.print(line + "\n");
        System.out.flush();
    }

    // To 1/1000, trailing zeros dropped, by hand: String.format's first call loads the Formatter,
    // the locale providers and a ResourceBundle (some 80 classes: seconds of a thread at nice 19
    // beside a busy CPU, inside a command's budget), a regular expression its Pattern.
    static String fmt(double x) {
        long m = Math.round(x * 1000.0); // thousandths
        if (m % 1000 == 0)
            return Long.toString(m / 1000);
        long a = Math.abs(m);
        StringBuilder frac = new StringBuilder(Long.toString(1000 + a % 1000).substring(1));
        while (frac.charAt(frac.length() - 1) == '0')
            frac.setLength(frac.length() - 1);
        return (m < 0 ? "-" : "") + a / 1000 + "." + frac;
    }

    static int api(String name) {
        for (int i = 0; i < APIS.length; i++)
            if (APIS[i].equals(name))
                return i;
        fail("unknown API '" + name + "': want one of " + String.join(" ", APIS), 64);
        return -1;
    }

    static int number(String text, String what, int lo, int hi) {
        long v = -1;
        boolean digits = text.length() >= 1 && text.length() <= 12;
        for (int i = 0; digits && i < text.length(); i++)
            digits = text.charAt(i) >= '0' && text.charAt(i) <= '9';
        if (digits)
            v = Long.parseLong(text);
        if (v < lo || v > hi)
            fail("bad " + what + " '" + text + "': want an integer from " + lo + " to " + hi, 64);
        return (int) v;
    }

    // One read on the API's own scale: ns for nanoTime, ms for currentTimeMillis, epoch ns for Instant.
    static long read(int api) {
        switch (api) {
        case 0: return System.nanoTime();
        case 1: return System.currentTimeMillis();
        default: Instant t = Instant.now(); return t.getEpochSecond() * 1_000_000_000L + t.getNano();
        }
    }

    // count back-to-back calls; one loop per API so that nothing but the call sits in the loop
    static long batch(int api, int count) {
        long acc = 0;
        switch (api) {
        case 0: for (int i = 0; i < count; i++) acc += System.nanoTime(); break;
        case 1: for (int i = 0; i < count; i++) acc += System.currentTimeMillis(); break;
        default: for (int i = 0; i < count; i++) acc += Instant.now().getNano(); break;
        }
        return acc;
    }

    static void fill(int api, long[] v) {
        switch (api) {
        case 0: for (int i = 0; i < v.length; i++) v[i] = System.nanoTime(); break;
        case 1: for (int i = 0; i < v.length; i++) v[i] = System.currentTimeMillis(); break;
        default:
            for (int i = 0; i < v.length; i++) {
                Instant t = Instant.now();
                v[i] = t.getEpochSecond() * 1_000_000_000L + t.getNano();
            }
        }
    }

    // at least `calls` calls, then on to MIN_WARMUP_CALLS for the JIT while within MAX_WARMUP_NS;
    // with a budget, never past half of it (once some calls are made)
    static boolean warming(int done, int calls, long start, long[] budget) {
        long now = System.nanoTime();
        if (budget[B_MS] > 0 && done > 0 && now - (budget[B_START] + budget[B_MS] * 500_000L) >= 0)
            return false;
        return done < calls || (done < MIN_WARMUP_CALLS && now - start < MAX_WARMUP_NS);
    }

    static void warmUp(int api, int calls, long[] budget) {
        long start = System.nanoTime();
        for (int done = 0; warming(done, calls, start, budget); done += BATCH_CALLS)
            sink += batch(api, BATCH_CALLS);
    }

    static void cost(int api, int n, long[] budget) {
        int batch = Math.min(n, BATCH_CALLS), batches = n / batch;
        warmUp(api, n, budget);
        double[] perCall = new double[batches];
        double total = 0;
        int done = batches;
        for (int b = 0; b < batches; b++) {
            long t0 = System.nanoTime();
            long acc = batch(api, batch);
            long t1 = System.nanoTime();
            sink += acc;
            perCall[b] = (double) (t1 - t0) / batch;
            total += perCall[b];
            if (budget[B_MS] > 0 && b + 1 < batches && overAt(budget, t1)) {
                done = b + 1;
                perCall = Arrays.copyOf(perCall, done);
                break;
            }
        }
        boolean cut = done < batches;
        batches = done;
        Arrays.sort(perCall);
        int mid = batches / 2;
        double p50 = batches % 2 == 1 ? perCall[mid] : (perCall[mid - 1] + perCall[mid]) / 2;
        // the median's 95% interval by order statistics: ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped
        double w = 0.98 * Math.sqrt(batches);
        int lo = (int) Math.max(0, Math.floor(batches / 2.0 - w)), hi = (int) Math.min(batches - 1, Math.ceil(batches / 2.0 + w));
        say("cost " + APIS[api] + " method=batch unit=ns n=" + (long) batches * batch + " batch=" + batch
                + " min=" + fmt(perCall[0]) + " p50=" + fmt(p50) + " mean=" + fmt(total / batches)
                + " max=" + fmt(perCall[batches - 1]) + " timer=System.nanoTime p50_lo=" + fmt(perCall[lo]) + " p50_hi=" + fmt(perCall[hi])
                + suffix(budget, cut));
    }

    // With a budget, the reads are made CHECK_EVERY at a time and the deadline looked at between
    // them; the step across a look (read i-1 to i, i a multiple of CHECK_EVERY) is not counted.
    static void steps(int api, int n, long[] budget) {
        if (n < 2)
            fail("bad n '" + n + "': steps needs at least 2 reads", 64);
        long[] v = new long[budget[B_MS] > 0 ? Math.min(n, CHECK_EVERY) : n];
        long start = System.nanoTime();
        for (int done = 0; warming(done, n, start, budget); done += v.length)
            fill(api, v); // warm-up: the JIT compiles the loop before the reads that count
        int done = n;
        if (budget[B_MS] == 0) {
            fill(api, v);
        } else {
            // blocks of reads, each its own array: one of n (80 MB for the largest) took, with
            // the collector, much of a small budget before the first read
            java.util.List<long[]> blocks = new java.util.ArrayList<>();
            for (int at = 0; at < n; at += CHECK_EVERY) {
                long[] block = new long[Math.min(CHECK_EVERY, n - at)];
                fill(api, block);
                blocks.add(block);
                if (at + block.length < n && over(budget)) {
                    done = at + block.length;
                    break;
                }
            }
            v = new long[done];
            for (int b = 0; b < blocks.size(); b++)
                System.arraycopy(blocks.get(b), 0, v, b * CHECK_EVERY, blocks.get(b).length);
        }
        long zero = 0, backward = 0, maxBack = 0, least = -1;
        TreeMap<Long, Long> bins = new TreeMap<>();
        for (int i = 1; i < done; i++) {
            if (budget[B_MS] > 0 && i % CHECK_EVERY == 0)
                continue; // the deadline's look sits in this step
            long s = (v[i] - v[i - 1]) * UNIT_NS[api];
            if (s < 0) {
                backward++;
                maxBack = Math.max(maxBack, -s);
                continue;
            }
            long upper = 0;
            if (s == 0) {
                zero++;
            } else {
                least = least < 0 ? s : Math.min(least, s);
                for (upper = 1; upper < s; upper *= 2) {
                }
            }
            bins.merge(upper, 1L, Long::sum);
        }
        StringBuilder hist = new StringBuilder();
        for (Map.Entry<Long, Long> e : bins.entrySet())
            hist.append(hist.length() > 0 ? "," : "").append(e.getKey()).append(':').append(e.getValue());
        say("steps " + APIS[api] + " n=" + done + " least_ns=" + (least < 0 ? "none" : Long.toString(least))
                + " zero=" + zero + " backward=" + backward + " max_backward_ns=" + maxBack + " hist=" + hist
                + suffix(budget, done < n));
    }

    // raw writes: FileOutputStream has no buffer, so each marker is one write(2)
    static final FileOutputStream ERR = new FileOutputStream(FileDescriptor.err);
    static final byte[] BEGIN = "cb-path-begin\n".getBytes(StandardCharsets.US_ASCII);
    static final byte[] END = "cb-path-end\n".getBytes(StandardCharsets.US_ASCII);

    static void path(int api, int n) throws IOException {
        warmUp(api, n, NO_BUDGET); // compiled before the window: no class loading or compile requests inside it
        ERR.write(BEGIN);
        long acc = batch(api, n);
        ERR.write(END);
        sink = acc;
    }

    // a value per line read; alone until end of input, within serve until a line cb-end
    static void stamp(int api, boolean serving) throws InterruptedException {
        for (String line; (line = nextLine()) != null && !(serving && line.equals("cb-end"));) {
            long v = read(api);
            say(Long.toString(api == 1 ? v * 1_000_000L : v));
        }
    }

    // A small /proc file whole, by java.io: java.nio.file's first use loads some 60 classes, tens
    // of ms of CPU, seconds of a thread at nice 19 beside a busy CPU (inside cross's budget).
    static String readProc(String path) throws IOException {
        try (FileInputStream in = new FileInputStream(path)) {
            byte[] buf = new byte[4096];
            int len = 0;
            for (int got; len < buf.length && (got = in.read(buf, len, buf.length - len)) > 0;)
                len += got;
            return new String(buf, 0, len, StandardCharsets.US_ASCII);
        }
    }

    static String threadId() {
        try {
            return readProc("/proc/thread-self/stat").split(" ", 2)[0];
        } catch (IOException e) {
            return null;
        }
    }

    // The one reader of stdin: a daemon thread puts its lines in a queue, then EOF for good.
    static final String EOF = "\u0000eof";
    static BlockingQueue<String> stdinQueue;
    static int staleReplies; // pin answers still to come for pin requests whose wait timed out

    static synchronized BlockingQueue<String> stdinLines() {
        if (stdinQueue != null)
            return stdinQueue;
        BlockingQueue<String> q = stdinQueue = new LinkedBlockingQueue<>();
        Thread t = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
                for (String line; (line = in.readLine()) != null;)
                    q.add(line);
            } catch (IOException e) {
                // taken as end of input
            }
            q.add(EOF);
        });
        t.setDaemon(true);
        t.start();
        return q;
    }

    // The next line within timeoutNs (< 0: no bound): null on time-out, EOF at end of input.
    // A late pin answer ("ok", "no ...") is passed over: it belongs to a request already given up.
    static String nextLine(long timeoutNs) throws InterruptedException {
        BlockingQueue<String> q = stdinLines();
        long deadline = System.nanoTime() + timeoutNs;
        for (;;) {
            String line = timeoutNs < 0 ? q.take() : q.poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (line == EOF)
                q.add(EOF); // for whoever reads next
            if (line != null && staleReplies > 0 && (line.equals("ok") || line.startsWith("no "))) {
                staleReplies--;
                continue;
            }
            return line;
        }
    }

    // the next line, or null at end of input
    static String nextLine() throws InterruptedException {
        String line = nextLine(-1);
        return line == EOF ? null : line;
    }

    // Asks the runner to pin tid to cpu; true when it answered "ok" within 10 s.
    static boolean requestPin(String tid, int cpu) throws InterruptedException {
        if (tid == null)
            return false;
        say("pin " + tid + " " + cpu);
        String reply = nextLine(10_000_000_000L);
        if (reply == null)
            staleReplies++;
        return "ok".equals(reply);
    }

    // With a budget, a round's wait is bounded by the time left as well as by 1 s, and no round
    // starts past the deadline: the rounds done are those whose reader saw the value or gave it up
    // after 1 s (lost); the rest are not done, and not lost.
    static void cross(int api, int cpuA, int cpuB, int rounds, long[] budget) throws Exception {
        AtomicLong seq = new AtomicLong();
        long[] t1 = new long[1];         // written before seq's volatile store, read after its volatile load
        long[] lost = new long[2], violations = new long[2], maxViolation = new long[2], done = new long[2];
        String[] tids = new String[2];
        CountDownLatch started = new CountDownLatch(2), go = new CountDownLatch(1);
        Thread[] sides = new Thread[2];
        warmUp(api, rounds, budget);
        for (int side = 0; side < 2; side++) {
            final int me = side;
            sides[me] = new Thread(() -> {
                tids[me] = threadId();
                started.countDown();
                try {
                    if (!go.await(WAIT_S, TimeUnit.SECONDS))
                        return;
                } catch (InterruptedException e) {
                    return;
                }
                for (int r = 0; r < rounds; r++) {
                    if (r % 2 == me) { // writer: a->b on even rounds, b->a on odd
                        t1[0] = read(api);
                        seq.set(r + 1); // volatile: a release store, as Java 9's setRelease
                        continue;
                    }
                    long begin = System.nanoTime();
                    if (overAt(budget, begin))
                        break;
                    long deadline = begin + ROUND_TIMEOUT_NS;
                    if (budget[B_MS] > 0 && budget[B_END] - deadline < 0)
                        deadline = budget[B_END];
                    boolean seen = true;
                    for (int spin = 1; seq.get() < r + 1; spin++) {
                        if (spin % 1024 == 0) {
                            if (System.nanoTime() - deadline > 0) {
                                seen = false;
                                break;
                            }
                            Thread.yield(); // lets a writer on the same CPU run
                        }
                    }
                    if (!seen && over(budget))
                        break; // the budget's end, not the round's second
                    done[me]++;
                    if (!seen) {
                        lost[me]++;
                        continue;
                    }
                    long a = t1[0], b = read(api);
                    if (b < a) {
                        violations[me]++;
                        maxViolation[me] = Math.max(maxViolation[me], (a - b) * UNIT_NS[api]);
                    }
                }
            });
            sides[me].start();
        }
        if (!started.await(WAIT_S, TimeUnit.SECONDS))
            fail("cross: the threads did not start within " + WAIT_S + " s", 1);
        // a budget gone before the threads are up (a starved CPU at nice 19): no pins asked for, and
        // the threads, let go, find it gone at their first round
        boolean pinned = !over(budget) && requestPin(tids[0], cpuA);
        pinned &= !over(budget) && requestPin(tids[1], cpuB);
        go.countDown();
        long bound = budget[B_MS] > 0 ? Math.min(rounds * 1000L, budget[B_MS]) : rounds * 1000L;
        for (Thread t : sides) {
            t.join(bound + WAIT_S * 1000L);
            if (t.isAlive())
                fail("cross: a thread did not finish in time", 1);
        }
        long roundsDone = budget[B_MS] > 0 ? done[0] + done[1] : rounds;
        say("cross " + APIS[api] + " a=" + cpuA + " b=" + cpuB + " rounds=" + roundsDone
                + " violations=" + (violations[0] + violations[1])
                + " max_violation_ns=" + Math.max(maxViolation[0], maxViolation[1])
                + " lost=" + (lost[0] + lost[1]) + " pinned=" + (pinned ? "requested" : "no")
                + suffix(budget, roundsDone < rounds));
    }

    // Linux's CPU list format ("0-3,8"), or exit 64.
    static int[] parseCpus(String text) {
        java.util.List<Integer> cpus = new java.util.ArrayList<>();
        for (String part : text.split(",", -1)) {
            int dash = part.indexOf('-');
            int lo = number(dash < 0 ? part : part.substring(0, dash), "cpus", 0, 4095);
            int hi = dash < 0 ? lo : number(part.substring(dash + 1), "cpus", lo, 4095);
            for (int c = lo; c <= hi && cpus.size() < 1024; c++)
                cpus.add(c);
        }
        int[] list = new int[cpus.size()];
        for (int i = 0; i < list.length; i++)
            list[i] = cpus.get(i);
        return list;
    }

    // This thread's involuntary context switches, -1 where /proc cannot say.
    static long involuntarySwitches() {
        try {
            for (String line : readProc("/proc/thread-self/status").split("\n"))
                if (line.startsWith("nonvoluntary_ctxt_switches:"))
                    return Long.parseLong(line.substring(27).trim());
        } catch (IOException | NumberFormatException e) {
            // not known
        }
        return -1;
    }

    static String known(long v) {
        return v < 0 ? "-" : Long.toString(v);
    }

    // With a budget, each thread looks at the deadline after each chunk (the chunk's own end, read
    // anyway) and stops there when it has passed: at least one chunk each.
    static void threads(int api, int k, int n, int[] cpus, long[] budget) throws Exception {
        // chunks of about 1000 calls, at least 20 of them: the least is what an idle CPU shows
        int chunk = Math.max(1, Math.min(1000, n / 20)), chunks = n / chunk, rest = n % chunk;
        CountDownLatch ready = new CountDownLatch(k), go = new CountDownLatch(1);
        long[] elapsed = new long[k], switches = new long[k], calls = new long[k];
        double[] least = new double[k], median = new double[k];
        String[] tids = new String[k];
        Thread[] workers = new Thread[k];
        for (int w = 0; w < k; w++) {
            final int me = w;
            workers[me] = new Thread(() -> {
                tids[me] = threadId();
                warmUp(api, n, budget);
                long[] d = new long[chunks];
                ready.countDown();
                try {
                    if (!go.await(WAIT_S, TimeUnit.SECONDS))
                        return;
                } catch (InterruptedException e) {
                    return;
                }
                long sw0 = involuntarySwitches();
                long t0 = System.nanoTime(), prev = t0, acc = 0;
                int c = 0;
                while (c < chunks) {
                    acc += batch(api, chunk);
                    long now = System.nanoTime();
                    d[c++] = now - prev;
                    prev = now;
                    if (c < chunks && overAt(budget, now))
                        break;
                }
                calls[me] = (long) c * chunk;
                if (c == chunks) {
                    acc += batch(api, rest);
                    calls[me] = n;
                }
                long t1 = System.nanoTime();
                long sw1 = involuntarySwitches();
                sink += acc;
                d = Arrays.copyOf(d, c);
                Arrays.sort(d);
                least[me] = (double) d[0] / chunk;
                median[me] = (double) d[c / 2] / chunk;
                switches[me] = sw0 < 0 || sw1 < 0 ? -1 : sw1 - sw0;
                elapsed[me] = Math.max(1, t1 - t0);
            });
            workers[me].start();
        }
        if (!ready.await(2 * WAIT_S, TimeUnit.SECONDS))
            fail("threads: the workers were not ready within " + 2 * WAIT_S + " s", 1);
        boolean pinned = cpus.length > 0;
        int[] on = new int[k];
        for (int w = 0; w < k; w++) {
            on[w] = -1;
            if (cpus.length > 0 && requestPin(tids[w], cpus[w % cpus.length]))
                on[w] = cpus[w % cpus.length];
            else
                pinned = false;
        }
        go.countDown(); // the common start
        double sum = 0, max = 0;
        boolean cut = false;
        StringBuilder cpu = new StringBuilder(), lo = new StringBuilder(), mid = new StringBuilder(),
            wall = new StringBuilder(), run = new StringBuilder(), sw = new StringBuilder(), made = new StringBuilder();
        for (int w = 0; w < k; w++) {
            workers[w].join(2 * WAIT_S * 1000L + budget[B_MS]);
            if (workers[w].isAlive() || elapsed[w] <= 0)
                fail("threads: a worker did not finish in time", 1);
            double perCall = (double) elapsed[w] / calls[w];
            cut |= calls[w] < n;
            sum += perCall;
            max = Math.max(max, perCall);
            String sep = w > 0 ? "," : "";
            cpu.append(sep).append(known(on[w]));
            lo.append(sep).append(fmt(least[w]));
            mid.append(sep).append(fmt(median[w]));
            wall.append(sep).append(elapsed[w]);
            run.append(sep).append("-");
            sw.append(sep).append(known(switches[w]));
            made.append(sep).append(calls[w]);
        }
        say("threads " + APIS[api] + " k=" + k + " n=" + n + " per_call_ns=" + fmt(sum / k)
                + " max_per_call_ns=" + fmt(max) + " chunk=" + chunk + " pinned=" + (pinned ? "requested" : "no")
                + " cpu=" + cpu + " least_ns=" + lo + " median_ns=" + mid + " wall_ns=" + wall + " run_ns=" + run
                + " nivcsw=" + sw + (budget[B_MS] > 0 ? " done=" + made : "") + suffix(budget, cut));
    }

    // Each line of stdin one command, run as alone, its answer followed by cb-served.
    static void serve() throws Exception {
        for (String line; (line = nextLine()) != null;) {
            if (line.isEmpty())
                continue;
            run(line.split(" ", -1), true);
            say("cb-served");
        }
    }

    // One command, from the command line or a line of serve: the one dispatcher of both.
    static void run(String[] argv, boolean serving) throws Exception {
        if (argv.length == 0)
            fail(USAGE, 64);
        String cmd = argv[0];
        int want;
        switch (cmd) {
        case "info": case "serve": want = 0; break;
        case "stamp": want = 1; break;
        case "cost": case "steps": case "path": want = 2; break;
        case "threads": want = 3; break;
        case "cross": want = 4; break;
        default: fail("unknown command '" + cmd + "'; " + USAGE, 64); return;
        }
        // words beyond: budget_ms on cost, steps and cross; threads' CPU list (without it its
        // threads are not pinned), then budget_ms
        int optional = cmd.equals("threads") ? 2 : cmd.equals("cost") || cmd.equals("steps") || cmd.equals("cross") ? 1 : 0;
        if (argv.length - 1 < want || argv.length - 1 > want + optional)
            fail(cmd + " takes " + want + " arguments; " + USAGE, 64);
        if (cmd.equals("serve")) {
            if (serving)
                fail("serve: already serving", 64);
            serve();
            return;
        }
        if (cmd.equals("info")) {
            String vm = System.getProperty("java.vm.name", "");
            String name = vm.startsWith("OpenJDK") ? "OpenJDK" : System.getProperty("java.runtime.name", "Java");
            // the VM's name and vendor: two JDKs of one version (Temurin, Debian's) are told apart
            say("runtime " + name + " " + System.getProperty("java.runtime.version") + " (" + vm + ", "
                + System.getProperty("java.vm.vendor", "unknown vendor") + ")");
            for (String a : APIS) {
                if (a.equals("Instant.now") && instantInMillis())
                    say("api " + a + " claim_ns=1000000 origin=clock claim_source=Java "
                        + System.getProperty("java.specification.version")
                        + ": Instant.now is Clock.systemUTC's System.currentTimeMillis, whole milliseconds (finer from Java 9)");
                else
                    say("api " + a + " claim_ns=none origin=clock claim_source=none stated");
            }
            return;
        }
        int api = api(argv[1]);
        switch (cmd) {
        case "cost": {
            int n = number(argv[2], "n", 1, MAX_N);
            cost(api, n, budgetAt(argv, 3));
            break;
        }
        case "steps": {
            int n = number(argv[2], "n", 1, MAX_N);
            steps(api, n, budgetAt(argv, 3));
            break;
        }
        case "path": path(api, number(argv[2], "n", 1, MAX_N)); break;
        case "stamp": stamp(api, serving); break;
        case "threads": {
            int k = number(argv[2], "k", 1, 1024), n = number(argv[3], "n", 1, MAX_N);
            int[] cpus = argv.length >= 5 ? parseCpus(argv[4]) : new int[0];
            threads(api, k, n, cpus, budgetAt(argv, 5));
            break;
        }
        default: {
            int a = number(argv[2], "cpu_a", 0, 4095), b = number(argv[3], "cpu_b", 0, 4095);
            int rounds = number(argv[4], "rounds", 1, MAX_N);
            cross(api, a, b, rounds, budgetAt(argv, 5));
        }
        }
    }

    // budget_ms where the command has it (argv[i]), else none
    static long[] budgetAt(String[] argv, int i) {
        return argv.length > i ? budget(number(argv[i], "budget_ms", 1, MAX_BUDGET_MS)) : NO_BUDGET;
    }

    public static void main(String[] argv) throws Exception {
        run(argv, false);
        System.out.flush();
        Runtime.getRuntime().halt(0); // the stdin reader thread may still be blocked in read
    }
}
