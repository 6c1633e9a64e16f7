// The Go clocks (time.Now, time.Since) as a program sees them, run by
// clockbench-os (the language probes of issue 36, one command line for all).
// Standard library only; builds with Debian 12's go 1.19.
//
// time.Now is read as the wall clock (UnixNano) in steps, stamp and cross;
// time.Since as the monotonic reading Go keeps beside it, from a time.Now taken
// at the probe's start: its origin (the runtime's startNano) is private.
//
// threads: k goroutines locked to OS threads, each pinned to a CPU of the list
// given and timing its calls in chunks (time.Now between chunks), with the
// thread's CPU time and involuntary switches over its loop.
//
// cost: each call alone between serialised TSC reads (tsc_amd64.s), an
// empty bracket measured beside every call and its median subtracted; exact
// percentiles (nearest rank) over the n samples. Every loop is written out
// once per API (a switch outside the loop), so no function value sits in a
// bracket.
//
// serve: one command a line on stdin, each through the same dispatcher as
// the command line (dispatch), its answer and `cb-served` written at once
// (os.Stdout is unbuffered).
package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

const (
	prog       = "probe-go"
	maxN       = 10000000 // 160 MB of samples at most
	maxThreads = 1024
	maxRounds  = 10000000
	// budget_ms's largest: an hour
	maxBudgetMs = 3600000
	// A unit that is one call (a cost sample, a steps read) is checked against
	// the budget once every checkEvery units, never inside a measured bracket.
	checkEvery = 1024
	cpuSetSize = 1024
	apis       = "time.Now, time.Since"
	commands   = "info, cost, steps, path, stamp, cross, threads, serve"
	usage      = "info | cost|steps <api> <n> [<budget_ms>] | path <api> <n> | stamp <api> | " +
		"cross <api> <cpu_a> <cpu_b> <rounds> [<budget_ms>] | threads <api> <k> <n> [<cpus> [<budget_ms>]] | serve"
	// Longer than any command (the longest is cross's, about 50 bytes): a
	// line beyond it is refused rather than gathered without bound.
	maxLine = 1024
)

const (
	apiNow = iota
	apiSince
)

var apiNames = [...]string{apiNow: "time.Now", apiSince: "time.Since"}

func tscBegin() uint64
func tscEnd() uint64

// What the measured calls return is stored here, so that no call is dropped.
var (
	sinkTime     time.Time
	sinkDuration time.Duration
	base         = time.Now() // time.Since's origin
	// stdin's one buffer, for serve's commands and stamp's questions alike
	input = bufio.NewReaderSize(os.Stdin, 4*maxLine)
)

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, prog+": "+format+"\n", args...)
	os.Exit(64)
}

// A whole decimal number in [lo, hi], or exit 64.
func parseU64(s, what string, lo, hi uint64) uint64 {
	for _, c := range s {
		if c < '0' || c > '9' {
			fail("bad %s '%s': not a whole number", what, s)
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if s == "" || err != nil || v < lo || v > hi {
		fail("bad %s '%s': must be %d..%d", what, s, lo, hi)
	}
	return v
}

// One read as ns on the API's scale: wall ns for time.Now, monotonic ns since base for time.Since.
func read(api int) int64 {
	if api == apiNow {
		return time.Now().UnixNano()
	}
	return int64(time.Since(base))
}

func info() {
	fmt.Printf("runtime %s\n", runtime.Version())
	fmt.Println("api time.Now claim_ns=none origin=clock claim_source=none stated")
	fmt.Println("api time.Since claim_ns=none origin=private claim_source=none stated")
}

// The optional bound on the whole of a command (cost, steps, cross, threads:
// docs/output.md, "Language probes: the contract"): its deadline is ms after
// the command starts, on Go's monotonic clock. Without one (ms 0) the command
// runs as it always did and its line has no budget fields.
type budget struct {
	ms  uint64
	end time.Time
}

func newBudget(ms uint64) budget {
	return budget{ms: ms, end: time.Now().Add(time.Duration(ms) * time.Millisecond)}
}

func (b budget) over() bool { return b.ms > 0 && !time.Now().Before(b.end) }

func (b budget) overAt(t time.Time) bool { return b.ms > 0 && !t.Before(b.end) }

// What the line ends with: nothing, or " budget_ms=B cut=0|1".
func (b budget) suffix(cut bool) string {
	if b.ms == 0 {
		return ""
	}
	c := 0
	if cut {
		c = 1
	}
	return fmt.Sprintf(" budget_ms=%d cut=%d", b.ms, c)
}

// Nearest rank, rank = ceil(p * n), as lib/stats.c does.
// ciRanks: the median's 95% interval by order statistics (docs/output.md, "cost"): the sorted
// samples at ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped.
func ciRanks(n int) (int, int) {
	half, w := float64(n)/2, 0.98*math.Sqrt(float64(n))
	lo, hi := int(math.Max(0, math.Floor(half-w))), int(math.Ceil(half+w))
	if hi > n-1 {
		hi = n - 1
	}
	return lo, hi
}

func percentile(sorted []uint64, perMille uint64) uint64 {
	n := uint64(len(sorted))
	rank := (perMille*n + 999) / 1000
	if rank < 1 {
		rank = 1
	}
	if rank > n {
		rank = n
	}
	return sorted[rank-1]
}

func cost(api int, n uint64, bud budget) {
	full := make([]uint64, n)
	empty := make([]uint64, n)
	done := n
	// with a budget, after every checkEvery-th sample: true when it has run out
	stop := func(i int) bool {
		at := uint64(i) + 1
		if bud.ms > 0 && at%checkEvery == 0 && at < n && bud.over() {
			done = at
			return true
		}
		return false
	}
	switch api {
	case apiNow:
		for i := range full {
			e0 := tscBegin()
			e1 := tscEnd()
			a := tscBegin()
			t := time.Now()
			b := tscEnd()
			sinkTime = t
			empty[i], full[i] = e1-e0, b-a
			if stop(i) {
				break
			}
		}
	case apiSince:
		for i := range full {
			e0 := tscBegin()
			e1 := tscEnd()
			a := tscBegin()
			d := time.Since(base)
			b := tscEnd()
			sinkDuration = d
			empty[i], full[i] = e1-e0, b-a
			if stop(i) {
				break
			}
		}
	}
	full, empty = full[:done], empty[:done]
	sum := 0.0
	for _, v := range full {
		sum += float64(v)
	}
	sort.Slice(full, func(i, j int) bool { return full[i] < full[j] })
	sort.Slice(empty, func(i, j int) bool { return empty[i] < empty[j] })
	br := percentile(empty, 500)
	minus := func(v uint64) uint64 {
		if v > br {
			return v - br
		}
		return 0
	}
	mean := sum/float64(done) - float64(br)
	if mean < 0 {
		mean = 0
	}
	lo, hi := ciRanks(len(full))
	fmt.Printf("cost %s method=tsc unit=ticks n=%d min=%d p50=%d mean=%.1f p99=%d p999=%d max=%d bracket=%d p50_lo=%d p50_hi=%d%s\n",
		apiNames[api], done, minus(full[0]), minus(percentile(full, 500)), mean, minus(percentile(full, 990)),
		minus(percentile(full, 999)), minus(full[done-1]), br, minus(full[lo]), minus(full[hi]), bud.suffix(done < n))
}

// With a budget, the deadline is looked at after every checkEvery-th read; the
// step across that look (read i-1 to i, i a multiple of checkEvery) holds it,
// and is not counted.
func steps(api int, n uint64, bud budget) {
	v := make([]int64, n)
	done := n
	stop := func(i int) bool {
		at := uint64(i) + 1
		if bud.ms > 0 && at%checkEvery == 0 && at < n && bud.over() {
			done = at
			return true
		}
		return false
	}
	switch api {
	case apiNow:
		ts := make([]time.Time, n)
		if bud.ms == 0 {
			for i := range ts {
				ts[i] = time.Now()
			}
		} else {
			for i := range ts {
				ts[i] = time.Now()
				if stop(i) {
					break
				}
			}
		}
		for i, t := range ts[:done] {
			v[i] = t.UnixNano()
		}
	case apiSince:
		if bud.ms == 0 {
			for i := range v {
				v[i] = int64(time.Since(base))
			}
		} else {
			for i := range v {
				v[i] = int64(time.Since(base))
				if stop(i) {
					break
				}
			}
		}
	}
	v = v[:done]
	hist := map[uint64]uint64{} // upper edge in ns -> count; 0: zero steps
	var least, zero, backward, maxBack uint64
	for i := 1; i < len(v); i++ {
		if bud.ms > 0 && i%checkEvery == 0 {
			continue // the deadline's look sits in this step
		}
		d := v[i] - v[i-1]
		switch {
		case d < 0:
			backward++
			if uint64(-d) > maxBack {
				maxBack = uint64(-d)
			}
		case d == 0:
			zero++
			hist[0]++
		default:
			if least == 0 || uint64(d) < least {
				least = uint64(d)
			}
			upper := uint64(1)
			for upper < uint64(d) {
				upper <<= 1
			}
			hist[upper]++
		}
	}
	edges := make([]uint64, 0, len(hist))
	for e := range hist {
		edges = append(edges, e)
	}
	sort.Slice(edges, func(i, j int) bool { return edges[i] < edges[j] })
	bins := make([]string, len(edges))
	for i, e := range edges {
		bins[i] = fmt.Sprintf("%d:%d", e, hist[e])
	}
	leastText := "none"
	if least > 0 {
		leastText = strconv.FormatUint(least, 10)
	}
	fmt.Printf("steps %s n=%d least_ns=%s zero=%d backward=%d max_backward_ns=%d hist=%s%s\n",
		apiNames[api], done, leastText, zero, backward, maxBack, strings.Join(bins, ","), bud.suffix(done < n))
}

// One write(2). Raw: the runtime is not told of the system call, so it does
// not hand this thread's P to another thread meanwhile and wake one on the
// way back (a futex seen between the markers under strace on a loaded host).
func marker(s string) {
	b := []byte(s)
	w, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, 2, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 || int(w) != len(b) {
		os.Exit(1)
	}
}

func path(api int, n uint64) {
	// the calls and both markers on one OS thread: the runner counts that thread's system calls
	runtime.LockOSThread()
	// A fresh time slice: sysmon preempts a goroutine that has run for 10 ms,
	// and the scheduler then reads CLOCK_MONOTONIC on this thread (a system
	// call each where the clocksource has no vDSO) between the markers.
	runtime.Gosched()
	marker("cb-path-begin\n")
	switch api {
	case apiNow:
		for i := uint64(0); i < n; i++ {
			sinkTime = time.Now()
		}
	case apiSince:
		for i := uint64(0); i < n; i++ {
			sinkDuration = time.Since(base)
		}
	}
	marker("cb-path-end\n")
	runtime.UnlockOSThread()
	fmt.Printf("path %s n=%d\n", apiNames[api], n)
}

const (
	lineOK = iota
	lineTooLong
	lineEOF
)

// One line of stdin without its '\n' (a last line may lack it), gathered by
// bufio across as many reads as the pipe hands over. A read error ends the
// input as EOF does. A line over maxLine is lineTooLong, read to its end
// when skip says so (else its rest may be left unread).
func readLine(skip bool) (string, int) {
	chunk, err := input.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		for skip && err == bufio.ErrBufferFull {
			_, err = input.ReadSlice('\n')
		}
		return "", lineTooLong
	}
	if err != nil && len(chunk) == 0 {
		return "", lineEOF
	}
	line := strings.TrimSuffix(string(chunk), "\n")
	if len(line) > maxLine {
		return "", lineTooLong
	}
	return line, lineOK
}

// Alone: every line to EOF is a question. Serving: until a line "cb-end".
func stamp(api int, serving bool) {
	for {
		line, got := readLine(true) // a line of any length is one question
		switch {
		case got == lineEOF:
			return
		case serving && got == lineOK && line == "cb-end":
			return
		}
		// os.Stdout is unbuffered: the line goes out with this call
		if _, err := fmt.Fprintln(os.Stdout, read(api)); err != nil {
			os.Exit(1)
		}
	}
}

type cpuMask [cpuSetSize / 64]uint64

// The calling OS thread's CPUs (the goroutine is locked to it first).
func getAffinity(mask *cpuMask) bool {
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(*mask),
		uintptr(unsafe.Pointer(mask)))
	return errno == 0
}

func setAffinity(mask *cpuMask) bool {
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(*mask),
		uintptr(unsafe.Pointer(mask)))
	return errno == 0
}

func pinSelf(cpu uint64) bool {
	var mask cpuMask
	mask[cpu/64] |= 1 << (cpu % 64)
	return setAffinity(&mask)
}

// With a budget, a round's wait is bounded by the time left as well as by 1 s,
// and no round starts past the deadline: the rounds done are those whose reader
// saw the value or gave it up after 1 s (lost); the rest are not done, and not lost.
func cross(api int, cpuA, cpuB, rounds uint64, bud budget) {
	var seq uint64
	var t1 int64
	var ready, pinFailed int32
	var violations, lost, done [2]uint64
	var worst [2]int64
	var wg sync.WaitGroup
	side := func(me uint64, cpu uint64) {
		defer wg.Done()
		runtime.LockOSThread()
		// The OS thread goes back to the runtime with the CPUs it had: a
		// later goroutine, serve's own among them, may run on it. Where they
		// cannot be put back it stays locked, and the runtime ends it with
		// this goroutine (the main thread it parks for good instead).
		var had cpuMask
		if getAffinity(&had) {
			defer func() {
				if setAffinity(&had) {
					runtime.UnlockOSThread()
				}
			}()
		}
		if !pinSelf(cpu) {
			atomic.StoreInt32(&pinFailed, 1)
		}
		atomic.AddInt32(&ready, 1)
		for atomic.LoadInt32(&ready) < 2 {
			runtime.Gosched()
		}
		for r := uint64(0); r < rounds && atomic.LoadInt32(&pinFailed) == 0; r++ {
			if r&1 == me { // a writes in even rounds, b in odd ones
				atomic.StoreInt64(&t1, read(api))
				atomic.StoreUint64(&seq, r+1) // Go's atomics are sequentially consistent: a release store
				continue
			}
			start := time.Now()
			if bud.overAt(start) {
				break
			}
			deadline := start.Add(time.Second)
			if bud.ms > 0 && bud.end.Before(deadline) {
				deadline = bud.end
			}
			seen := true
			for spin := 1; atomic.LoadUint64(&seq) < r+1; spin++ {
				if spin%1024 == 0 {
					if time.Now().After(deadline) {
						seen = false
						break
					}
					runtime.Gosched() // lets a writer waiting for this P run (GOMAXPROCS=1)
				}
			}
			if !seen && bud.over() {
				break // the budget's end, not the round's second
			}
			done[me]++
			if !seen {
				lost[me]++
				continue
			}
			t2 := read(api)
			if d := atomic.LoadInt64(&t1) - t2; d > 0 {
				violations[me]++
				if d > worst[me] {
					worst[me] = d
				}
			}
		}
	}
	wg.Add(2)
	go side(0, cpuA)
	go side(1, cpuB)
	wg.Wait()
	if pinFailed != 0 {
		fail("cannot pin a thread to cpu %d or %d (sched_setaffinity refused it)", cpuA, cpuB)
	}
	w := worst[0]
	if worst[1] > w {
		w = worst[1]
	}
	roundsDone := rounds
	if bud.ms > 0 {
		roundsDone = done[0] + done[1]
	}
	fmt.Printf("cross %s a=%d b=%d rounds=%d violations=%d max_violation_ns=%d lost=%d pinned=self%s\n",
		apiNames[api], cpuA, cpuB, roundsDone, violations[0]+violations[1], w, lost[0]+lost[1],
		bud.suffix(roundsDone < rounds))
}

// Linux's CPU list format ("0-3,8"), or exit 64.
func parseCPUs(text string) []uint64 {
	var cpus []uint64
	for _, part := range strings.Split(text, ",") {
		lo, hi := part, part
		if i := strings.IndexByte(part, '-'); i >= 0 {
			lo, hi = part[:i], part[i+1:]
		}
		a := parseU64(lo, "cpus", 0, cpuSetSize-1)
		b := parseU64(hi, "cpus", a, cpuSetSize-1)
		for c := a; c <= b && len(cpus) < maxThreads; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// The calling OS thread's CPU time (CLOCK_THREAD_CPUTIME_ID), -1 unread.
func threadCPUNs() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return -1
	}
	return ts.Nano()
}

// The calling OS thread's involuntary context switches (getrusage RUSAGE_THREAD), -1 unread.
func involuntarySwitches() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(1, &ru) != nil {
		return -1
	}
	return ru.Nivcsw
}

type threadRun struct {
	cpu, wallNs, runNs, nivcsw int64
	least, median              float64
	done                       uint64 // the calls it made
}

func known(v int64) string {
	if v < 0 {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

// k goroutines, each locked to an OS thread pinned to a CPU of the list, with
// GOMAXPROCS raised to k so that all k run at once as the other languages'
// threads do; each times its calls in chunks (the least is what an idle CPU
// shows) and reads its thread's CPU time and involuntary switches. With a
// budget, each looks at the deadline after each chunk (the chunk's own end,
// read anyway) and stops there when it has passed: at least one chunk each.
func threads(api int, k, n uint64, cpus []uint64, bud budget) {
	if was := runtime.GOMAXPROCS(0); uint64(was) < k {
		runtime.GOMAXPROCS(int(k))
		defer runtime.GOMAXPROCS(was) // serve's next command runs as it would alone
	}
	chunk := n / 20
	if chunk < 1 {
		chunk = 1
	} else if chunk > 1000 {
		chunk = 1000
	}
	chunks, rest := n/chunk, n%chunk
	runs := make([]threadRun, k)
	var unpinned int32
	if len(cpus) == 0 {
		unpinned = 1
	}
	var ready sync.WaitGroup
	var done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(int(k))
	done.Add(int(k))
	for t := uint64(0); t < k; t++ {
		go func(t uint64) {
			defer done.Done()
			runtime.LockOSThread()
			// put back the CPUs the OS thread had before it goes back to the runtime (as cross does)
			var had cpuMask
			if getAffinity(&had) {
				defer func() {
					if setAffinity(&had) {
						runtime.UnlockOSThread()
					}
				}()
			}
			me := &runs[t]
			me.cpu = -1
			if len(cpus) > 0 {
				c := cpus[t%uint64(len(cpus))]
				if pinSelf(c) {
					me.cpu = int64(c)
				} else {
					atomic.StoreInt32(&unpinned, 1)
				}
			}
			d := make([]int64, chunks)
			ready.Done()
			<-start
			sw0, cpu0 := involuntarySwitches(), threadCPUNs()
			t0 := time.Now()
			prev := t0
			c := 0
			// after chunk c-1: its time, and whether the budget stops the loop there
			endChunk := func() bool {
				now := time.Now()
				d[c] = int64(now.Sub(prev))
				c++
				prev = now
				return c < len(d) && bud.overAt(now)
			}
			switch api {
			case apiNow:
				var last time.Time
				for c < len(d) {
					for i := uint64(0); i < chunk; i++ {
						last = time.Now()
					}
					if endChunk() {
						break
					}
				}
				if c == len(d) {
					for i := uint64(0); i < rest; i++ {
						last = time.Now()
					}
				}
				sinkTime = last
			case apiSince:
				var last time.Duration
				for c < len(d) {
					for i := uint64(0); i < chunk; i++ {
						last = time.Since(base)
					}
					if endChunk() {
						break
					}
				}
				if c == len(d) {
					for i := uint64(0); i < rest; i++ {
						last = time.Since(base)
					}
				}
				sinkDuration = last
			}
			me.wallNs = int64(time.Since(t0))
			me.done = uint64(c) * chunk
			if c == len(d) {
				me.done = n
			}
			d = d[:c]
			cpu1, sw1 := threadCPUNs(), involuntarySwitches()
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			me.least = float64(d[0]) / float64(chunk)
			me.median = float64(d[len(d)/2]) / float64(chunk)
			me.runNs, me.nivcsw = -1, -1
			if cpu0 >= 0 && cpu1 >= 0 {
				me.runNs = cpu1 - cpu0
			}
			if sw0 >= 0 && sw1 >= 0 {
				me.nivcsw = sw1 - sw0
			}
		}(t)
	}
	ready.Wait()
	close(start)
	done.Wait()
	sum, worst := 0.0, 0.0
	cut := false
	var cpu, least, median, wall, run, sw, doneList []string
	for _, r := range runs {
		v := float64(r.wallNs) / float64(r.done)
		cut = cut || r.done < n
		doneList = append(doneList, strconv.FormatUint(r.done, 10))
		sum += v
		if v > worst {
			worst = v
		}
		cpu = append(cpu, known(r.cpu))
		least = append(least, strconv.FormatFloat(r.least, 'f', 2, 64))
		median = append(median, strconv.FormatFloat(r.median, 'f', 2, 64))
		wall = append(wall, strconv.FormatInt(r.wallNs, 10))
		run = append(run, known(r.runNs))
		sw = append(sw, known(r.nivcsw))
	}
	pinned := "self"
	if unpinned != 0 {
		pinned = "no"
	}
	doneText := ""
	if bud.ms > 0 {
		doneText = " done=" + strings.Join(doneList, ",")
	}
	fmt.Printf("threads %s k=%d n=%d per_call_ns=%.2f max_per_call_ns=%.2f chunk=%d pinned=%s cpu=%s least_ns=%s "+
		"median_ns=%s wall_ns=%s run_ns=%s nivcsw=%s%s%s\n", apiNames[api], k, n, sum/float64(k), worst, chunk, pinned,
		strings.Join(cpu, ","), strings.Join(least, ","), strings.Join(median, ","), strings.Join(wall, ","),
		strings.Join(run, ","), strings.Join(sw, ","), doneText, bud.suffix(cut))
}

// One command, its words as on the command line (os.Args[1:]); serving: read
// from serve's stdin, where stamp ends at "cb-end" and serve is no command.
func dispatch(args []string, serving bool) {
	if len(args) < 1 {
		fail("usage: %s %s", prog, usage)
	}
	cmd := args[0]
	switch cmd {
	case "info":
		if len(args) != 1 {
			fail("usage: %s info", prog)
		}
		info()
		return
	case "serve":
		if serving {
			fail("serve: already serving")
		}
		if len(args) != 1 {
			fail("usage: %s serve", prog)
		}
		serve()
		return
	case "cost", "steps", "path", "stamp", "cross", "threads":
	default:
		fail("unknown command '%s' (%s)", cmd, commands)
	}
	if len(args) < 2 {
		fail("usage: %s %s <api> ...", prog, cmd)
	}
	api := -1
	for i, name := range apiNames {
		if args[1] == name {
			api = i
		}
	}
	if api < 0 {
		fail("unknown api '%s' (%s)", args[1], apis)
	}
	rest := args[2:]
	need := func(count int, usage string) {
		if len(rest) != count {
			fail("usage: %s %s %s", prog, cmd, usage)
		}
	}
	// cost, steps, cross and threads take budget_ms as an optional last word
	needBudgeted := func(count int, usage string) {
		if len(rest) != count && len(rest) != count+1 {
			fail("usage: %s %s %s [<budget_ms>]", prog, cmd, usage)
		}
	}
	budgetAt := func(i int) budget {
		if i < len(rest) {
			return newBudget(parseU64(rest[i], "budget_ms", 1, maxBudgetMs))
		}
		return budget{}
	}
	switch cmd {
	case "cost":
		needBudgeted(1, "<api> <n>")
		n := parseU64(rest[0], "n", 1, maxN)
		cost(api, n, budgetAt(1))
	case "steps":
		needBudgeted(1, "<api> <n>")
		n := parseU64(rest[0], "n", 2, maxN)
		steps(api, n, budgetAt(1))
	case "path":
		need(1, "<api> <n>")
		path(api, parseU64(rest[0], "n", 1, maxN))
	case "stamp":
		need(0, "<api>")
		stamp(api, serving)
	case "cross":
		needBudgeted(3, "<api> <cpu_a> <cpu_b> <rounds>")
		a, b := parseU64(rest[0], "cpu_a", 0, cpuSetSize-1), parseU64(rest[1], "cpu_b", 0, cpuSetSize-1)
		rounds := parseU64(rest[2], "rounds", 1, maxRounds)
		cross(api, a, b, rounds, budgetAt(3))
	case "threads":
		// the CPU list may be left out, but not before a budget
		if len(rest) < 2 || len(rest) > 4 {
			fail("usage: %s threads <api> <k> <n> [<cpus> [<budget_ms>]]", prog)
		}
		k, n := parseU64(rest[0], "k", 1, maxThreads), parseU64(rest[1], "n", 1, maxN)
		var cpus []uint64
		if len(rest) >= 3 {
			cpus = parseCPUs(rest[2])
		}
		threads(api, k, n, cpus, budgetAt(3))
	}
}

// Words split at single spaces, as the contract writes them: two spaces make
// an empty word, refused as the command line refuses an empty argument.
func serve() {
	for {
		line, got := readLine(false)
		switch got {
		case lineEOF:
			return
		case lineTooLong:
			fail("a command line longer than %d bytes", maxLine)
		}
		if line == "" {
			continue
		}
		dispatch(strings.Split(line, " "), true)
		if _, err := os.Stdout.WriteString("cb-served\n"); err != nil {
			os.Exit(1)
		}
	}
}

func main() {
	dispatch(os.Args[1:], false)
}
