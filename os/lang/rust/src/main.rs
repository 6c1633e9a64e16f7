//! The Rust clocks (std::time::Instant::now, SystemTime::now) as a program sees
//! them, run by clockbench-os (the language probes of issue 36, one command line
//! for all). std only, no crates; builds with Debian 12's rustc 1.63.
//!
//! cost:  each call alone between serialised TSC reads through core::arch's asm!
//!        (lfence;rdtsc;lfence before, lfence;rdtsc after: the pair clockbench-os
//!        uses), an empty bracket measured beside every call and its median
//!        subtracted; exact percentiles (nearest rank) over the n samples.
//! steps: n back-to-back reads, differences in ns (checked_duration_since, so a
//!        backward step is seen rather than saturated to zero).
//! stamp: SystemTime as Unix epoch ns. Instant's value is private in std's API;
//!        its Debug form prints the timespec it holds (tv_sec, tv_nsec, read by
//!        clock_gettime), which is that value itself: printed on its clock's
//!        scale (origin=clock); where a std prints no such fields, the ns since
//!        the probe's first Instant (origin=private).
//! threads: each of k threads pinned to a CPU of the list given, its n calls
//!        timed by Instant in chunks; per thread the least and median chunk's
//!        cost per call, its wall time, its CPU time (CLOCK_THREAD_CPUTIME_ID)
//!        and its involuntary context switches (getrusage RUSAGE_THREAD).
//! serve: one command a line on stdin, each through the same dispatcher as the
//!        command line (dispatch), its answer and `cb-served` flushed.
use std::arch::asm;
use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::process::exit;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const PROG: &str = "probe-rust";
const MAX_N: u64 = 10_000_000; // 160 MB of samples at most
const MAX_THREADS: u64 = 1024;
const MAX_ROUNDS: u64 = 10_000_000;
const MAX_BUDGET_MS: u64 = 3_600_000; // an hour
/// A unit that is one call (a cost sample, a steps read) is checked against the
/// budget once every CHECK_EVERY units, never inside a measured bracket.
const CHECK_EVERY: u64 = 1024;
const CPU_SETSIZE: u64 = 1024;
const APIS: &str = "Instant::now, SystemTime::now";
const COMMANDS: &str = "info, cost, steps, path, stamp, cross, threads, serve";
// Longer than any command (the longest is cross's, about 50 bytes): a line
// beyond it is refused rather than gathered without bound.
const MAX_LINE: usize = 1024;
const USAGE: &str = "info | cost|steps <api> <n> [<budget_ms>] | path <api> <n> | stamp <api> | \
     cross <api> <cpu_a> <cpu_b> <rounds> [<budget_ms>] | threads <api> <k> <n> [<cpus> [<budget_ms>]] | serve";

extern "C" {
    // glibc; pid 0 is the calling thread
    fn sched_setaffinity(pid: i32, cpusetsize: usize, mask: *const u64) -> i32;
    // struct timespec is two i64 on x86-64; struct rusage two timevals then 14 longs
    fn clock_gettime(clock: i32, ts: *mut [i64; 2]) -> i32;
    fn getrusage(who: i32, usage: *mut [i64; 18]) -> i32;
}
const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
const RUSAGE_THREAD: i32 = 1;

fn fail(msg: String) -> ! {
    eprintln!("{}: {}", PROG, msg);
    exit(64);
}

/// A whole decimal number in [lo, hi], or exit 64.
fn parse_u64(s: &str, what: &str, lo: u64, hi: u64) -> u64 {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        fail(format!("bad {} '{}': not a whole number", what, s));
    }
    match s.parse::<u64>() {
        Ok(v) if v >= lo && v <= hi => v,
        _ => fail(format!("bad {} '{}': must be {}..{}", what, s, lo, hi)),
    }
}

// The TSC pair in one asm block each, the two halves joined inside it: with
// _rdtsc and _mm_lfence (core::arch::x86_64) rustc moved the shifts and ORs
// of the earlier reads into the measured bracket, beside the call.
#[inline(always)]
fn tsc_begin() -> u64 {
    let t: u64;
    unsafe {
        asm!("lfence", "rdtsc", "lfence", "shl rdx, 32", "or rax, rdx", out("rax") t, out("rdx") _,
             options(nostack))
    };
    t
}

#[inline(always)]
fn tsc_end() -> u64 {
    let t: u64;
    unsafe { asm!("lfence", "rdtsc", "shl rdx, 32", "or rax, rdx", out("rax") t, out("rdx") _, options(nostack)) };
    t
}

/// Keeps a value live: the empty asm may read it, so it must exist.
#[inline(always)]
fn keep<T>(v: &T) {
    unsafe { asm!("/* {0} */", in(reg) v as *const T, options(nostack, preserves_flags, readonly)) }
}

fn signed_ns(later: Option<Duration>, earlier: impl FnOnce() -> Duration) -> i64 {
    match later {
        Some(d) => d.as_nanos() as i64,
        None => -(earlier().as_nanos() as i64),
    }
}

trait Clock {
    type T: Copy + Send + Sync + 'static;
    const NAME: &'static str;
    fn now() -> Self::T;
    /// b - a in ns, negative when b is before a.
    fn diff_ns(a: Self::T, b: Self::T) -> i64;
    /// The value on its clock's own scale in ns, or None when it has a private origin.
    fn stamp_ns(t: Self::T) -> Option<i64>;
}

struct InstantNow;
impl Clock for InstantNow {
    type T = Instant;
    const NAME: &'static str = "Instant::now";
    #[inline(always)]
    fn now() -> Instant {
        Instant::now()
    }
    fn diff_ns(a: Instant, b: Instant) -> i64 {
        signed_ns(b.checked_duration_since(a), || a.duration_since(b))
    }
    fn stamp_ns(t: Instant) -> Option<i64> {
        let text = format!("{:?}", t);
        let field = |key: &str| -> Option<i64> {
            let rest = &text[text.find(key)? + key.len()..];
            let digits: String = rest.chars().skip_while(|c| !c.is_ascii_digit()).take_while(|c| c.is_ascii_digit()).collect();
            digits.parse().ok()
        };
        Some(field("tv_sec")? * 1_000_000_000 + field("tv_nsec")?)
    }
}

struct SystemTimeNow;
impl Clock for SystemTimeNow {
    type T = SystemTime;
    const NAME: &'static str = "SystemTime::now";
    #[inline(always)]
    fn now() -> SystemTime {
        SystemTime::now()
    }
    fn diff_ns(a: SystemTime, b: SystemTime) -> i64 {
        signed_ns(b.duration_since(a).ok(), || a.duration_since(b).unwrap_or_default())
    }
    fn stamp_ns(t: SystemTime) -> Option<i64> {
        Some(Self::diff_ns(UNIX_EPOCH, t))
    }
}

fn info() {
    let rustc = option_env!("CB_RUSTC_VERSION").unwrap_or("rustc (version not recorded at build time)");
    println!("runtime {}", rustc);
    let instant_origin = if InstantNow::stamp_ns(Instant::now()).is_some() { "clock" } else { "private" };
    println!("api Instant::now claim_ns=none origin={} claim_source=none stated", instant_origin);
    println!("api SystemTime::now claim_ns=none origin=clock claim_source=none stated");
}

/// Nearest rank, rank = ceil(p * n), as lib/stats.c does.
/// The median's 95% interval by order statistics (docs/output.md, "cost"): the sorted samples at
/// ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped.
fn ci_ranks(n: usize) -> (usize, usize) {
    let (half, w) = (n as f64 / 2.0, 0.98 * (n as f64).sqrt());
    ((half - w).floor().max(0.0) as usize, ((half + w).ceil() as usize).min(n - 1))
}

/// The optional bound on the whole of a command (cost, steps, cross, threads:
/// docs/output.md, "Language probes: the contract"): its deadline is ms after the
/// command starts, on Instant. Without one (ms 0) the command runs as it always
/// did and its line has no budget fields.
#[derive(Clone, Copy)]
struct Budget {
    ms: u64,
    end: Instant,
}

impl Budget {
    fn new(ms: u64) -> Budget {
        Budget { ms, end: Instant::now() + Duration::from_millis(ms) }
    }
    fn over(&self) -> bool {
        self.ms > 0 && Instant::now() >= self.end
    }
    fn over_at(&self, t: Instant) -> bool {
        self.ms > 0 && t >= self.end
    }
    /// What the line ends with: nothing, or " budget_ms=B cut=0|1".
    fn suffix(&self, cut: bool) -> String {
        if self.ms == 0 {
            return String::new();
        }
        format!(" budget_ms={} cut={}", self.ms, cut as u8)
    }
}

fn percentile(sorted: &[u64], per_mille: u64) -> u64 {
    let n = sorted.len() as u64;
    let rank = ((per_mille * n + 999) / 1000).clamp(1, n);
    sorted[(rank - 1) as usize]
}

fn cost<C: Clock>(n: u64, budget: Budget) {
    let mut full = vec![0u64; n as usize];
    let mut empty = vec![0u64; n as usize];
    let mut done = n;
    for i in 0..n as usize {
        let e0 = tsc_begin();
        keep(&0u64);
        let e1 = tsc_end();
        let a = tsc_begin();
        let t = C::now();
        let b = tsc_end();
        keep(&t);
        empty[i] = e1.wrapping_sub(e0);
        full[i] = b.wrapping_sub(a);
        let at = i as u64 + 1;
        if budget.ms > 0 && at % CHECK_EVERY == 0 && at < n && budget.over() {
            done = at;
            full.truncate(at as usize);
            empty.truncate(at as usize);
            break;
        }
    }
    let sum: f64 = full.iter().map(|&v| v as f64).sum();
    full.sort_unstable();
    empty.sort_unstable();
    let br = percentile(&empty, 500);
    let minus = |v: u64| v.saturating_sub(br);
    let mean = (sum / done as f64 - br as f64).max(0.0);
    println!(
        "cost {} method=tsc unit=ticks n={} min={} p50={} mean={:.1} p99={} p999={} max={} bracket={} p50_lo={} p50_hi={}{}",
        C::NAME,
        done,
        minus(full[0]),
        minus(percentile(&full, 500)),
        mean,
        minus(percentile(&full, 990)),
        minus(percentile(&full, 999)),
        minus(full[full.len() - 1]),
        br,
        minus(full[ci_ranks(full.len()).0]),
        minus(full[ci_ranks(full.len()).1]),
        budget.suffix(done < n)
    );
}

/// With a budget, the deadline is looked at after every CHECK_EVERY-th read; the
/// step across that look (read i-1 to i, i a multiple of CHECK_EVERY) holds it,
/// and is not counted.
fn steps<C: Clock>(n: u64, budget: Budget) {
    let first = C::now();
    let mut v;
    if budget.ms == 0 {
        v = vec![first; n as usize];
        for slot in v.iter_mut() {
            *slot = C::now();
        }
    } else {
        // the reads' room reserved, not written: filling 160 MB for the largest n took much of a small budget
        v = Vec::with_capacity(n as usize);
        for i in 0..n {
            v.push(C::now());
            if (i + 1) % CHECK_EVERY == 0 && i + 1 < n && budget.over() {
                break;
            }
        }
    }
    let mut hist: BTreeMap<u64, u64> = BTreeMap::new(); // upper edge in ns -> count; 0: zero steps
    let (mut least, mut zero, mut backward, mut max_back) = (0u64, 0u64, 0u64, 0u64);
    for (i, w) in v.windows(2).enumerate() {
        if budget.ms > 0 && (i as u64 + 1) % CHECK_EVERY == 0 {
            continue; // the deadline's look sits in this step
        }
        let d = C::diff_ns(w[0], w[1]);
        if d < 0 {
            backward += 1;
            max_back = max_back.max(d.unsigned_abs());
        } else if d == 0 {
            zero += 1;
            *hist.entry(0).or_insert(0) += 1;
        } else {
            let d = d as u64;
            if least == 0 || d < least {
                least = d;
            }
            *hist.entry(d.next_power_of_two()).or_insert(0) += 1;
        }
    }
    let h: Vec<String> = hist.iter().map(|(k, c)| format!("{}:{}", k, c)).collect();
    println!(
        "steps {} n={} least_ns={} zero={} backward={} max_backward_ns={} hist={}{}",
        C::NAME,
        v.len(),
        if least > 0 { least.to_string() } else { "none".to_string() },
        zero,
        backward,
        max_back,
        h.join(","),
        budget.suffix((v.len() as u64) < n)
    );
}

fn marker(s: &str) {
    // std's stderr is unbuffered: one write(2) for the whole line
    if std::io::stderr().write_all(s.as_bytes()).is_err() {
        exit(1);
    }
}

fn path<C: Clock>(n: u64) {
    marker("cb-path-begin\n");
    for _ in 0..n {
        let t = C::now();
        keep(&t);
    }
    marker("cb-path-end\n");
    println!("path {} n={}", C::NAME, n);
}

enum Line {
    Ok(Vec<u8>),
    TooLong, // its rest left unread
    Eof,
}

/// One line of stdin without its '\n' (a last line may lack it), through
/// std's one shared buffer, gathered across as many reads as the pipe hands
/// over. A read error ends the input as EOF does.
fn read_line() -> Line {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    loop {
        let (used, done) = match input.fill_buf() {
            Ok([]) | Err(_) => return if line.is_empty() { Line::Eof } else { Line::Ok(line) },
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(at) => {
                    line.extend_from_slice(&buf[..at]);
                    (at + 1, true)
                }
                None => {
                    line.extend_from_slice(buf);
                    (buf.len(), false)
                }
            },
        };
        if line.len() > MAX_LINE {
            return Line::TooLong;
        }
        input.consume(used);
        if done {
            return Line::Ok(line);
        }
    }
}

fn skip_line() {
    let stdin = std::io::stdin();
    let mut byte = [0u8];
    while let Ok(1) = stdin.lock().read(&mut byte) {
        if byte[0] == b'\n' {
            break;
        }
    }
}

fn flush_or_exit() {
    if std::io::stdout().flush().is_err() {
        exit(1);
    }
}

/// Alone: every line to EOF is a question. Serving: until a line "cb-end".
fn stamp<C: Clock>(serving: bool) {
    let origin = Instant::now();
    loop {
        match read_line() {
            Line::Eof => return,
            Line::TooLong => skip_line(), // a line of any length is one question
            Line::Ok(line) if serving && line == b"cb-end" => return,
            Line::Ok(_) => {}
        }
        let t = C::now();
        let ns = C::stamp_ns(t).unwrap_or_else(|| InstantNow::diff_ns(origin, Instant::now()));
        if writeln!(std::io::stdout(), "{}", ns).is_err() {
            exit(1);
        }
        flush_or_exit();
    }
}

fn pin_self(cpu: u64) -> bool {
    let mut mask = [0u64; (CPU_SETSIZE / 64) as usize];
    mask[(cpu / 64) as usize] |= 1 << (cpu % 64);
    unsafe { sched_setaffinity(0, std::mem::size_of_val(&mask), mask.as_ptr()) == 0 }
}

struct Shared {
    seq: AtomicU64,
    t1: AtomicI64,
    ready: AtomicUsize,
    pin_failed: AtomicBool,
}

/// (violations, largest violation in ns, lost rounds, rounds done) of one thread's rounds as
/// reader. With a budget, a round's wait is bounded by the time left as well as by 1 s, and no
/// round starts past the deadline: the rounds done are those whose reader saw the value or gave
/// it up after 1 s (lost); the rest are not done, and not lost.
fn cross_side<C: Clock>(me: u64, cpu: u64, rounds: u64, base: C::T, s: &Shared, budget: Budget) -> (u64, i64, u64, u64) {
    if !pin_self(cpu) {
        s.pin_failed.store(true, Ordering::SeqCst);
    }
    s.ready.fetch_add(1, Ordering::SeqCst);
    while s.ready.load(Ordering::SeqCst) < 2 {
        std::thread::yield_now();
    }
    let (mut violations, mut worst, mut lost, mut done) = (0u64, 0i64, 0u64, 0u64);
    for r in 0..rounds {
        if s.pin_failed.load(Ordering::Relaxed) {
            break;
        }
        if r & 1 == me {
            // a writes in even rounds, b in odd ones
            let t1 = C::now();
            s.t1.store(C::diff_ns(base, t1), Ordering::Relaxed);
            s.seq.store(r + 1, Ordering::Release);
            continue;
        }
        let start = Instant::now();
        if budget.over_at(start) {
            break;
        }
        let mut deadline = start + Duration::from_secs(1);
        if budget.ms > 0 && budget.end < deadline {
            deadline = budget.end;
        }
        let mut seen = true;
        let mut spin = 0u64;
        while s.seq.load(Ordering::Acquire) < r + 1 {
            spin += 1;
            if spin % 1024 == 0 {
                if Instant::now() > deadline {
                    seen = false;
                    break;
                }
                std::thread::yield_now(); // lets a writer on the same CPU run
            }
        }
        if !seen && budget.over() {
            break; // the budget's end, not the round's second
        }
        done += 1;
        if !seen {
            lost += 1;
            continue;
        }
        let t2 = C::diff_ns(base, C::now());
        let d = s.t1.load(Ordering::Relaxed) - t2;
        if d > 0 {
            violations += 1;
            worst = worst.max(d);
        }
    }
    (violations, worst, lost, done)
}

fn cross<C: Clock>(cpu_a: u64, cpu_b: u64, rounds: u64, budget: Budget) {
    let s = Arc::new(Shared { seq: AtomicU64::new(0), t1: AtomicI64::new(0), ready: AtomicUsize::new(0), pin_failed: AtomicBool::new(false) });
    let base = C::now();
    let sides: Vec<_> = [(0u64, cpu_a), (1u64, cpu_b)]
        .iter()
        .map(|&(me, cpu)| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || cross_side::<C>(me, cpu, rounds, base, &s, budget))
        })
        .collect();
    let (mut v, mut worst, mut lost, mut done) = (0u64, 0i64, 0u64, 0u64);
    for h in sides {
        let (a, b, c, d) = h.join().expect("a cross thread panicked");
        v += a;
        worst = worst.max(b);
        lost += c;
        done += d;
    }
    if s.pin_failed.load(Ordering::SeqCst) {
        fail(format!("cannot pin a thread to cpu {} or {} (sched_setaffinity refused it)", cpu_a, cpu_b));
    }
    let rounds_done = if budget.ms > 0 { done } else { rounds };
    println!(
        "cross {} a={} b={} rounds={} violations={} max_violation_ns={} lost={} pinned=self{}",
        C::NAME,
        cpu_a,
        cpu_b,
        rounds_done,
        v,
        worst,
        lost,
        budget.suffix(rounds_done < rounds)
    );
}

/// Linux's CPU list format ("0-3,8"), or exit 64.
fn parse_cpus(text: &str) -> Vec<u64> {
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => {
                let lo = parse_u64(a, "cpus", 0, CPU_SETSIZE - 1);
                (lo, parse_u64(b, "cpus", lo, CPU_SETSIZE - 1))
            }
            None => {
                let c = parse_u64(part, "cpus", 0, CPU_SETSIZE - 1);
                (c, c)
            }
        };
        cpus.extend((lo..=hi).take(MAX_THREADS as usize));
    }
    cpus
}

fn thread_cpu_ns() -> i64 {
    let mut ts = [0i64; 2];
    if unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
        ts[0] * 1_000_000_000 + ts[1]
    } else {
        -1
    }
}

fn involuntary_switches() -> i64 {
    let mut ru = [0i64; 18];
    if unsafe { getrusage(RUSAGE_THREAD, &mut ru) } == 0 {
        ru[17] // ru_nivcsw
    } else {
        -1
    }
}

/// One thread's loop: (cpu or -1, least and median chunk per call, wall ns, CPU ns or -1, switches or -1).
struct ThreadRun {
    cpu: i64,
    least: f64,
    median: f64,
    wall_ns: i64,
    run_ns: i64,
    nivcsw: i64,
    done: u64, // the calls it made
}

/// With a budget, each thread looks at the deadline after each chunk (the chunk's own end,
/// read anyway) and stops there when it has passed: at least one chunk each.
fn threads<C: Clock>(k: u64, n: u64, cpus: Vec<u64>, budget: Budget) {
    // chunks of about 1000 calls, at least 20 of them: the least is what an idle CPU shows
    let chunk = (n / 20).clamp(1, 1000);
    let (chunks, rest) = (n / chunk, n % chunk);
    let barrier = Arc::new(Barrier::new(k as usize));
    let cpus = Arc::new(cpus);
    let unpinned = Arc::new(AtomicBool::new(cpus.is_empty()));
    let pool: Vec<_> = (0..k)
        .map(|t| {
            let barrier = Arc::clone(&barrier);
            let cpus = Arc::clone(&cpus);
            let unpinned = Arc::clone(&unpinned);
            std::thread::spawn(move || {
                let mut cpu = -1i64;
                if !cpus.is_empty() {
                    let c = cpus[(t as usize) % cpus.len()];
                    if pin_self(c) {
                        cpu = c as i64;
                    } else {
                        unpinned.store(true, Ordering::SeqCst);
                    }
                }
                let mut d = vec![0u64; chunks as usize];
                barrier.wait();
                let sw0 = involuntary_switches();
                let cpu0 = thread_cpu_ns();
                let t0 = Instant::now();
                let mut prev = t0;
                let mut c = 0usize;
                while c < d.len() {
                    for _ in 0..chunk {
                        let t = C::now();
                        keep(&t);
                    }
                    let now = Instant::now();
                    d[c] = now.duration_since(prev).as_nanos() as u64;
                    c += 1;
                    prev = now;
                    if c < d.len() && budget.over_at(now) {
                        break;
                    }
                }
                let mut done = c as u64 * chunk;
                if c == d.len() {
                    for _ in 0..rest {
                        let t = C::now();
                        keep(&t);
                    }
                    done = n;
                }
                d.truncate(c);
                let wall_ns = t0.elapsed().as_nanos() as i64;
                let cpu1 = thread_cpu_ns();
                let sw1 = involuntary_switches();
                d.sort_unstable();
                ThreadRun {
                    cpu,
                    least: d[0] as f64 / chunk as f64,
                    median: d[d.len() / 2] as f64 / chunk as f64,
                    wall_ns,
                    run_ns: if cpu0 >= 0 && cpu1 >= 0 { cpu1 - cpu0 } else { -1 },
                    nivcsw: if sw0 >= 0 && sw1 >= 0 { sw1 - sw0 } else { -1 },
                    done,
                }
            })
        })
        .collect();
    let runs: Vec<ThreadRun> = pool.into_iter().map(|h| h.join().expect("a thread panicked")).collect();
    let per_call: Vec<f64> = runs.iter().map(|r| r.wall_ns as f64 / r.done as f64).collect();
    let mean = per_call.iter().sum::<f64>() / k as f64;
    let worst = per_call.iter().cloned().fold(0.0, f64::max);
    let known = |v: i64| if v < 0 { "-".to_string() } else { v.to_string() };
    let list = |f: &dyn Fn(&ThreadRun) -> String| runs.iter().map(f).collect::<Vec<_>>().join(",");
    let done = if budget.ms > 0 { format!(" done={}", list(&|r| r.done.to_string())) } else { String::new() };
    println!(
        "threads {} k={} n={} per_call_ns={:.2} max_per_call_ns={:.2} chunk={} pinned={} cpu={} least_ns={} median_ns={} wall_ns={} run_ns={} nivcsw={}{}{}",
        C::NAME,
        k,
        n,
        mean,
        worst,
        chunk,
        if unpinned.load(Ordering::SeqCst) { "no" } else { "self" },
        list(&|r| known(r.cpu)),
        list(&|r| format!("{:.2}", r.least)),
        list(&|r| format!("{:.2}", r.median)),
        list(&|r| r.wall_ns.to_string()),
        list(&|r| known(r.run_ns)),
        list(&|r| known(r.nivcsw)),
        done,
        budget.suffix(runs.iter().any(|r| r.done < n))
    );
}

fn run<C: Clock>(cmd: &str, args: &[String], serving: bool) {
    let need = |count: usize, usage: &str| {
        if args.len() != count {
            fail(format!("usage: {} {} {}", PROG, cmd, usage));
        }
    };
    // cost, steps, cross and threads take budget_ms as an optional last word
    let need_budgeted = |count: usize, usage: &str| {
        if args.len() != count && args.len() != count + 1 {
            fail(format!("usage: {} {} {} [<budget_ms>]", PROG, cmd, usage));
        }
    };
    let budget_at = |i: usize| Budget::new(args.get(i).map(|b| parse_u64(b, "budget_ms", 1, MAX_BUDGET_MS)).unwrap_or(0));
    match cmd {
        "cost" => {
            need_budgeted(1, "<api> <n>");
            let n = parse_u64(&args[0], "n", 1, MAX_N);
            cost::<C>(n, budget_at(1))
        }
        "steps" => {
            need_budgeted(1, "<api> <n>");
            let n = parse_u64(&args[0], "n", 2, MAX_N);
            steps::<C>(n, budget_at(1))
        }
        "path" => {
            need(1, "<api> <n>");
            path::<C>(parse_u64(&args[0], "n", 1, MAX_N))
        }
        "stamp" => {
            need(0, "<api>");
            stamp::<C>(serving)
        }
        "cross" => {
            need_budgeted(3, "<api> <cpu_a> <cpu_b> <rounds>");
            let a = parse_u64(&args[0], "cpu_a", 0, CPU_SETSIZE - 1);
            let b = parse_u64(&args[1], "cpu_b", 0, CPU_SETSIZE - 1);
            let rounds = parse_u64(&args[2], "rounds", 1, MAX_ROUNDS);
            cross::<C>(a, b, rounds, budget_at(3))
        }
        "threads" => {
            // the CPU list may be left out, but not before a budget
            if args.len() < 2 || args.len() > 4 {
                fail(format!("usage: {} threads <api> <k> <n> [<cpus> [<budget_ms>]]", PROG));
            }
            let (k, n) = (parse_u64(&args[0], "k", 1, MAX_THREADS), parse_u64(&args[1], "n", 1, MAX_N));
            let cpus = args.get(2).map(|c| parse_cpus(c)).unwrap_or_default();
            threads::<C>(k, n, cpus, budget_at(3))
        }
        _ => unreachable!(),
    }
}

/// One command, its words as on the command line (argv[1..]); serving: read
/// from serve's stdin, where stamp ends at "cb-end" and serve is no command.
fn dispatch(words: &[String], serving: bool) {
    if words.is_empty() {
        fail(format!("usage: {} {}", PROG, USAGE));
    }
    let cmd = words[0].as_str();
    match cmd {
        "info" if words.len() == 1 => return info(),
        "info" => fail(format!("usage: {} info", PROG)),
        "serve" if serving => fail("serve: already serving".to_string()),
        "serve" if words.len() == 1 => return serve(),
        "serve" => fail(format!("usage: {} serve", PROG)),
        "cost" | "steps" | "path" | "stamp" | "cross" | "threads" => {}
        _ => fail(format!("unknown command '{}' ({})", cmd, COMMANDS)),
    }
    if words.len() < 2 {
        fail(format!("usage: {} {} <api> ...", PROG, cmd));
    }
    match words[1].as_str() {
        "Instant::now" => run::<InstantNow>(cmd, &words[2..], serving),
        "SystemTime::now" => run::<SystemTimeNow>(cmd, &words[2..], serving),
        api => fail(format!("unknown api '{}' ({})", api, APIS)),
    }
}

/// Words split at single spaces, as the contract writes them: two spaces make
/// an empty word, refused as the command line refuses an empty argument.
fn serve() {
    loop {
        let line = match read_line() {
            Line::Eof => return,
            Line::TooLong => fail(format!("a command line longer than {} bytes", MAX_LINE)),
            Line::Ok(line) => line,
        };
        if line.is_empty() {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let words: Vec<String> = text.split(' ').map(String::from).collect();
        dispatch(&words, true);
        println!("cb-served");
        flush_or_exit();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    dispatch(&args, false);
    flush_or_exit();
}
