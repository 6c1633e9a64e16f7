// probe-node: what Node.js's clocks cost, how fine they step, and whether they hold across CPUs
// (issue 36; the command line, info/cost/steps/path/stamp/cross/threads, is shared by every
// language's probe and run by clockbench-os).
//
// JavaScript cannot read the TSC, so a call's cost is measured the batch way: about 1000
// back-to-back calls timed by process.hrtime.bigint, after a warm-up that lets V8 optimise the
// loop; the median batch's ns per call is reported. Steps are the differences between n
// back-to-back reads. Node states no resolution for its clocks. `cross` and `threads` run in
// worker_threads (real OS threads); a worker cannot pin itself, so `cross` asks the runner to
// ("pin <tid> <cpu>" on stdout, "ok" or "no <reason>" back on stdin), and so does `threads`, whose
// workers time their calls in chunks by process.hrtime.bigint and read their involuntary context
// switches from /proc/thread-self/status (Node has no thread CPU time: run_ns is "-"). performance.now counts from
// each thread's own start (origin=private): `cross` puts both threads' readings on one scale by
// bracketing each thread's origin between process.hrtime.bigint reads, and says how wide that
// bracket is (origin_err_ns).
//
// `serve` runs many commands in one V8 (docs/output.md, "Language probes: the contract"): each
// line of stdin goes through the same run() as the command line. stdin has one reader, one
// readline interface (it reads ahead, so a second reader would miss what it took), whose lines
// wait in one queue for serve's commands, stamp's lines and cross's pin answers alike.
//
// Node.js 12 and later (issue 48): nothing newer than ES2019 and Node 12's library (no ?., ??,
// numeric separators, Array.prototype.at, the global performance). An older Node.js is told so in
// one line (exit 69), not by a stack trace: the check comes before anything it may lack, and the
// file parses on Node.js 8 (no BigInt literal: BigInt(...) calls, made after the check).
'use strict';

const NEED_NODE = 12;
if (Number(process.versions.node.split('.')[0]) < NEED_NODE) {
  require('fs').writeSync(2, 'probe-node: needs Node.js ' + NEED_NODE + ' or later; this is ' + process.version + '\n');
  process.exit(69);
}

const fs = require('fs');
const readline = require('readline');
const { Worker, isMainThread, workerData, parentPort } = require('worker_threads');
// perf_hooks' performance, not the global one: that is Node 16's, and Debian 11's Node 12 has only
// this (the same object where both exist)
const { performance } = require('perf_hooks');

const APIS = ['process.hrtime.bigint', 'performance.now', 'Date.now'];
const HRTIME = 0, PERF_NOW = 1, DATE_NOW = 2;
const BATCH_CALLS = 1000;
const MIN_WARMUP_CALLS = 200000; // enough for V8's optimising compiler to take the loops...
const MAX_WARMUP_NS = BigInt(500000000); // ...unless that takes longer (a syscall a call under TCG)
const MAX_N = 10000000;
const ROUND_TIMEOUT_NS = BigInt(1000000000);
const WAIT_MS = 60000;
const MAX_BUDGET_MS = 3600000; // an hour
const NS_PER_MS = BigInt(1000000);
const CHECK_EVERY = 1024; // a steps read is one call: the budget is looked at once every CHECK_EVERY
const USAGE = 'usage: node probe.js info | cost API N [BUDGET_MS] | steps API N [BUDGET_MS] | path API N | stamp API' +
  ' | cross API CPU_A CPU_B ROUNDS [BUDGET_MS] | threads API K N [CPUS [BUDGET_MS]] | serve';

function fail(message, status = 64) {
  fs.writeSync(2, `probe-node: ${message}\n`);
  process.exit(status);
}

function say(line) {
  fs.writeSync(1, line + '\n');
}

function fmt(x) {
  const r = Math.round(x * 1000) / 1000;
  return Number.isInteger(r) ? String(r) : r.toFixed(3).replace(/0+$/, '');
}

function apiOf(name) {
  const api = APIS.indexOf(name);
  if (api < 0) fail(`unknown API '${name}': want one of ${APIS.join(' ')}`);
  return api;
}

function number(text, what, lo, hi) {
  const v = /^[0-9]{1,12}$/.test(text) ? Number(text) : -1;
  if (v < lo || v > hi) fail(`bad ${what} '${text}': want an integer from ${lo} to ${hi}`);
  return v;
}

// The optional bound on the whole of a command (cost, steps, cross, threads: docs/output.md,
// "Language probes: the contract"): its deadline is ms after the command starts, on
// process.hrtime.bigint (CLOCK_MONOTONIC, one scale for every thread). Without one (ms 0) the
// command runs as it always did and its line has no budget fields. A worker gets {ms, start, end}
// as they are: a plain object, cloned.
function budgetOf(ms) {
  const start = process.hrtime.bigint();
  return { ms, start, end: start + BigInt(ms) * NS_PER_MS };
}
const NO_BUDGET = budgetOf(0);

function over(budget, t) {
  return budget.ms > 0 && (t === undefined ? process.hrtime.bigint() : t) >= budget.end;
}

// what the line ends with: nothing, or " budget_ms=B cut=0|1"
function suffix(budget, cut) {
  return budget.ms > 0 ? ` budget_ms=${budget.ms} cut=${cut ? 1 : 0}` : '';
}

// count back-to-back calls; one loop per API so that nothing but the call sits in the loop
function batch(api, count) {
  let acc = 0;
  if (api === HRTIME) {
    let v = BigInt(0);
    for (let i = 0; i < count; i++) v = process.hrtime.bigint();
    return Number(v & BigInt(1));
  }
  if (api === PERF_NOW) {
    for (let i = 0; i < count; i++) acc += performance.now();
  } else {
    for (let i = 0; i < count; i++) acc += Date.now();
  }
  return acc;
}

// at least `calls` calls, then on to MIN_WARMUP_CALLS for the JIT while within MAX_WARMUP_NS;
// with a budget, never past half of it (once some calls are made)
function warming(done, calls, start, budget) {
  const now = process.hrtime.bigint();
  if (budget.ms > 0 && done > 0 && now >= budget.start + BigInt(budget.ms) * NS_PER_MS / BigInt(2)) return false;
  return done < calls || (done < MIN_WARMUP_CALLS && now - start < MAX_WARMUP_NS);
}

function warmUp(api, calls, budget) {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let done = 0; warming(done, calls, start, budget); done += BATCH_CALLS) sink += batch(api, BATCH_CALLS);
  return sink;
}

function cost(api, n, budget) {
  const size = Math.min(n, BATCH_CALLS), asked = Math.floor(n / size);
  let sink = warmUp(api, n, budget);
  const perCall = [];
  for (let b = 0; b < asked; b++) {
    const t0 = process.hrtime.bigint();
    const acc = batch(api, size);
    const t1 = process.hrtime.bigint();
    sink += acc;
    perCall.push(Number(t1 - t0) / size);
    if (b + 1 < asked && over(budget, t1)) break;
  }
  const batches = perCall.length;
  perCall.sort((a, b) => a - b);
  const mid = batches >> 1;
  const p50 = batches % 2 ? perCall[mid] : (perCall[mid - 1] + perCall[mid]) / 2;
  const mean = perCall.reduce((a, b) => a + b, 0) / batches;
  // the median's 95% interval by order statistics: ranks n/2 -+ 0.98 sqrt(n), 0-based, clamped
  const w = 0.98 * Math.sqrt(batches);
  const lo = Math.max(0, Math.floor(batches / 2 - w)), hi = Math.min(batches - 1, Math.ceil(batches / 2 + w));
  say(`cost ${APIS[api]} method=batch unit=ns n=${batches * size} batch=${size} min=${fmt(perCall[0])} ` +
    `p50=${fmt(p50)} mean=${fmt(mean)} max=${fmt(perCall[batches - 1])} timer=process.hrtime.bigint ` +
    `p50_lo=${fmt(perCall[lo])} p50_hi=${fmt(perCall[hi])}${suffix(budget, batches < asked)}`);
  return sink;
}

// n back-to-back reads, then their steps in ns
function stepsNs(api, n) {
  const out = new Float64Array(n - 1);
  if (api === HRTIME) {
    const v = new BigInt64Array(n);
    for (let i = 0; i < n; i++) v[i] = process.hrtime.bigint();
    for (let i = 1; i < n; i++) out[i - 1] = Number(v[i] - v[i - 1]);
  } else {
    const v = new Float64Array(n);
    if (api === PERF_NOW) for (let i = 0; i < n; i++) v[i] = performance.now();
    else for (let i = 0; i < n; i++) v[i] = Date.now();
    for (let i = 1; i < n; i++) out[i - 1] = (v[i] - v[i - 1]) * 1e6;
  }
  return out;
}

// With a budget, the reads are made CHECK_EVERY at a time and the deadline looked at between them;
// the step across a look is not counted.
function steps(api, n, budget) {
  if (n < 2) fail(`bad n '${n}': steps needs at least 2 reads`);
  const start = process.hrtime.bigint();
  let s, done = n;
  if (budget.ms === 0) {
    for (let w = 0; warming(w, n, start, budget); w += n) stepsNs(api, n); // warm-up for the JIT
    s = stepsNs(api, n);
  } else {
    const size = Math.min(n, CHECK_EVERY);
    for (let w = 0; warming(w, n, start, budget); w += size) stepsNs(api, size);
    const blocks = [];
    for (done = 0; done < n;) {
      const block = stepsNs(api, Math.min(CHECK_EVERY, n - done));
      blocks.push(block);
      done += block.length + 1;
      if (done < n && over(budget)) break;
    }
    s = [];
    for (const block of blocks) for (const step of block) s.push(step);
  }
  let zero = 0, backward = 0, maxBack = 0, least = null;
  const bins = new Map();
  for (const step of s) {
    if (step < 0) {
      backward++;
      maxBack = Math.max(maxBack, -step);
      continue;
    }
    let upper = 0;
    if (step === 0) {
      zero++;
    } else {
      least = least === null ? step : Math.min(least, step);
      for (upper = 1; upper < step; upper *= 2);
    }
    bins.set(upper, (bins.get(upper) || 0) + 1);
  }
  const hist = [...bins.keys()].sort((a, b) => a - b).map((u) => `${u}:${bins.get(u)}`).join(',');
  say(`steps ${APIS[api]} n=${done} least_ns=${least === null ? 'none' : fmt(least)} zero=${zero} ` +
    `backward=${backward} max_backward_ns=${fmt(maxBack)} hist=${hist}${suffix(budget, done < n)}`);
}

function path(api, n) {
  warmUp(api, n, NO_BUDGET); // optimised before the window: no compiling or heap growth inside it
  fs.writeSync(2, 'cb-path-begin\n'); // one write(2) each: fs.writeSync has no buffer
  const acc = batch(api, n);
  fs.writeSync(2, 'cb-path-end\n');
  return acc;
}

// The value on the clock's own scale and origin, as an integer in ns.
function stampValue(api) {
  if (api === HRTIME) return String(process.hrtime.bigint());
  if (api === PERF_NOW) return String(Math.round(performance.now() * 1e6));
  return String(BigInt(Date.now()) * NS_PER_MS);
}

// The one reader of stdin, made on first use: take(timeoutMs) resolves to the next line, null at
// end of input (for good), undefined when timeoutMs (if given) passes first.
let stdinTake = null;
let staleReplies = 0; // pin answers still to come for pin requests whose wait timed out

function stdinLines() {
  if (stdinTake) return stdinTake;
  const lines = [], waiters = [];
  let ended = false;
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (l) => (waiters.length ? waiters.shift()(l) : lines.push(l)));
  rl.on('close', () => {
    ended = true;
    while (waiters.length) waiters.shift()(null);
  });
  stdinTake = (timeoutMs) => new Promise((resolve) => {
    if (lines.length) return resolve(lines.shift());
    if (ended) return resolve(null);
    let timer = null;
    const waiter = (l) => {
      if (timer) clearTimeout(timer);
      resolve(l);
    };
    if (timeoutMs !== undefined) {
      timer = setTimeout(() => {
        waiters.splice(waiters.indexOf(waiter), 1);
        resolve(undefined);
      }, timeoutMs);
    }
    waiters.push(waiter);
  });
  return stdinTake;
}

// The next line of stdin, as stdinLines' take; a late pin answer ("ok", "no ...") is passed
// over: it belongs to a request already given up.
async function nextLine(timeoutMs) {
  const take = stdinLines();
  const deadline = Date.now() + (timeoutMs || 0);
  for (;;) {
    const line = await take(timeoutMs === undefined ? undefined : Math.max(0, deadline - Date.now()));
    if (typeof line === 'string' && staleReplies > 0 && (line === 'ok' || line.startsWith('no '))) {
      staleReplies--;
      continue;
    }
    return line;
  }
}

// a value per line read; alone until end of input, within serve until a line cb-end
async function stamp(api, serving) {
  for (let line; (line = await nextLine()) !== null && !(serving && line === 'cb-end');) say(stampValue(api));
}

// A worker's end: its command is not done until its thread is gone. Watched from the worker's
// start (an early exit is not missed); the returned function waits for it, bounded from then on.
function ended(worker, what) {
  let gone = false, wake = null;
  worker.on('exit', () => {
    gone = true;
    if (wake) wake();
  });
  return () => new Promise((resolve) => {
    if (gone) return resolve();
    const timer = setTimeout(() => fail(`${what}: a worker did not end within ${WAIT_MS / 1000} s`, 1), WAIT_MS);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

// A worker's messages as a queue; a worker that fails ends the probe with one line. A worker
// ended on purpose (terminate) answers null to whoever still waits for it.
function inbox(worker, what) {
  const queue = [], waiters = [];
  worker.on('message', (m) => (waiters.length ? waiters.shift()(m) : queue.push(m)));
  worker.on('error', (e) => fail(`${what}: a worker failed: ${String(e.message || e).split('\n')[0]}`, 1));
  worker.on('exit', () => {
    while (waiters.length) waiters.shift()(null);
  });
  return (timeoutMs = WAIT_MS) => new Promise((resolve) => {
    if (queue.length) return resolve(queue.shift());
    const timer = setTimeout(() => fail(`${what}: a worker did not answer within ${timeoutMs / 1000} s`, 1), timeoutMs);
    waiters.push((m) => {
      clearTimeout(timer);
      resolve(m);
    });
  });
}

// Resolves to null after ms (at least 0): a deadline to race a wait against.
function after(ms) {
  return new Promise((resolve) => setTimeout(() => resolve(null), Math.max(0, ms)));
}

// shared words of cross and threads
const SEQ = 0, GO = 1;

// With a budget, a round's wait is bounded by the time left as well as by 1 s, and no round starts
// past the deadline: the rounds done are those whose reader saw the value or gave it up after 1 s
// (lost); the rest are not done, and not lost.
async function cross(api, cpuA, cpuB, rounds, budget) {
  const sab = new SharedArrayBuffer(64);
  const ctl = new Int32Array(sab, 0, 4);
  const base = process.hrtime.bigint();
  const workers = [0, 1].map((me) => new Worker(__filename,
    { workerData: { kind: 'cross', me, api, rounds, sab, base, budget } }));
  const next = workers.map((w) => inbox(w, 'cross'));
  const gone = workers.map((w) => ended(w, 'cross'));
  const ready = Promise.all(next.map((n) => n(WAIT_MS + budget.ms)));
  // A budget that runs out before both workers are up (a V8 each: seconds of a starved CPU at
  // nice 19) ends the command there: the workers are ended, no round was done.
  const hello = budget.ms > 0 ? await Promise.race([ready, after(Number(budget.end - process.hrtime.bigint()) / 1e6)])
    : await ready;
  if (hello === null || hello.includes(null)) {
    await Promise.all(workers.map((w) => w.terminate()));
    await Promise.all(gone.map((g) => g()));
    say(`cross ${APIS[api]} a=${cpuA} b=${cpuB} rounds=0 violations=0 max_violation_ns=0 lost=0 pinned=no` +
      suffix(budget, true));
    return;
  }
  let pinned = true;
  for (const [me, cpu] of [[0, cpuA], [1, cpuB]]) {
    if (!hello[me].tid) {
      pinned = false;
      continue;
    }
    say(`pin ${hello[me].tid} ${cpu}`);
    const reply = await nextLine(10000);
    if (reply === undefined) staleReplies++;
    if (reply !== 'ok') pinned = false;
  }
  Atomics.store(ctl, GO, 1);
  Atomics.notify(ctl, GO);
  // each round may take 1 s, the budget's rounds no more than it
  const done = await Promise.all(next.map((n) => n((budget.ms > 0 ? Math.min(rounds * 1000, budget.ms) : rounds * 1000) + WAIT_MS)));
  await Promise.all(gone.map((g) => g())); // the pinned threads end with the command
  const violations = done[0].violations + done[1].violations;
  const maxViolation = Math.max(done[0].maxViolation, done[1].maxViolation);
  const lost = done[0].lost + done[1].lost;
  const roundsDone = budget.ms > 0 ? done[0].done + done[1].done : rounds;
  const originErr = api === PERF_NOW ? ` origin_err_ns=${fmt(hello[0].originErr + hello[1].originErr)}` : '';
  say(`cross ${APIS[api]} a=${cpuA} b=${cpuB} rounds=${roundsDone} violations=${violations} ` +
    `max_violation_ns=${fmt(maxViolation)} lost=${lost} pinned=${pinned ? 'requested' : 'no'}${originErr}` +
    suffix(budget, roundsDone < rounds));
}

function threadId() {
  try {
    return fs.readFileSync('/proc/thread-self/stat', 'latin1').split(' ')[0];
  } catch (e) {
    return null;
  }
}

// This thread's performance.now origin on process.hrtime.bigint's scale, less base, in ns: the
// narrowest of many brackets hrtime, performance.now, hrtime; err is half its width.
function perfOrigin(base) {
  let best = { origin: 0, err: Infinity };
  for (let i = 0; i < 2000; i++) {
    const h1 = process.hrtime.bigint();
    const p = performance.now();
    const h2 = process.hrtime.bigint();
    const lo = Number(h1 - base) - p * 1e6, hi = Number(h2 - base) - p * 1e6;
    if ((hi - lo) / 2 < best.err) best = { origin: (lo + hi) / 2, err: (hi - lo) / 2 };
  }
  return best;
}

function crossWorker({ me, api, rounds, sab, base, budget }) {
  const ctl = new Int32Array(sab, 0, 4);
  const t1Big = new BigInt64Array(sab, 16, 1); // hrtime.bigint's t1
  const t1Num = new Float64Array(sab, 24, 1);  // performance.now's (on the common scale) or Date.now's
  warmUp(api, rounds, budget);
  if (api === PERF_NOW) perfOrigin(base); // warm-up: the brackets are narrowest once V8 has optimised them
  const { origin, err } = api === PERF_NOW ? perfOrigin(base) : { origin: 0, err: 0 };
  parentPort.postMessage({ tid: threadId(), originErr: err });
  if (Atomics.wait(ctl, GO, 0, WAIT_MS) === 'timed-out') process.exit(1);
  let lost = 0, violations = 0, maxViolation = 0, done = 0;
  for (let r = 0; r < rounds; r++) {
    if (r % 2 === me) { // writer: a->b on even rounds, b->a on odd
      if (api === HRTIME) t1Big[0] = process.hrtime.bigint();
      else t1Num[0] = api === PERF_NOW ? performance.now() * 1e6 + origin : Date.now();
      Atomics.store(ctl, SEQ, r + 1);
      continue;
    }
    const begin = process.hrtime.bigint();
    if (over(budget, begin)) break;
    let deadline = begin + ROUND_TIMEOUT_NS;
    if (budget.ms > 0 && budget.end < deadline) deadline = budget.end;
    let seen = true;
    while (Atomics.load(ctl, SEQ) < r + 1) {
      if (process.hrtime.bigint() > deadline) {
        seen = false;
        break;
      }
    }
    if (!seen && over(budget)) break; // the budget's end, not the round's second
    done++;
    if (!seen) {
      lost++;
      continue;
    }
    let behindNs = 0;
    if (api === HRTIME) {
      const a = t1Big[0], b = process.hrtime.bigint();
      behindNs = Number(a - b);
    } else if (api === PERF_NOW) {
      const a = t1Num[0], b = performance.now() * 1e6 + origin;
      behindNs = a - b;
    } else {
      const a = t1Num[0], b = Date.now();
      behindNs = (a - b) * 1e6;
    }
    if (behindNs > 0) {
      violations++;
      maxViolation = Math.max(maxViolation, behindNs);
    }
  }
  parentPort.postMessage({ lost, violations, maxViolation, done });
}

// Linux's CPU list format ("0-3,8"), or exit 64.
function parseCpus(text) {
  const cpus = [];
  for (const part of text.split(',')) {
    const dash = part.indexOf('-');
    const lo = number(dash < 0 ? part : part.slice(0, dash), 'cpus', 0, 4095);
    const hi = dash < 0 ? lo : number(part.slice(dash + 1), 'cpus', lo, 4095);
    for (let c = lo; c <= hi && cpus.length < 1024; c++) cpus.push(c);
  }
  return cpus;
}

// This thread's involuntary context switches, -1 where /proc cannot say.
function involuntarySwitches() {
  try {
    const m = /^nonvoluntary_ctxt_switches:\s*(\d+)/m.exec(fs.readFileSync('/proc/thread-self/status', 'latin1'));
    return m ? Number(m[1]) : -1;
  } catch (e) {
    return -1;
  }
}

// With a budget, each worker looks at the deadline after each chunk (the chunk's own end, read
// anyway) and stops there when it has passed: at least one chunk each.
async function threads(api, k, n, cpus, budget) {
  const chunk = Math.max(1, Math.min(1000, Math.floor(n / 20))); // about 1000 calls, at least 20 chunks
  const sab = new SharedArrayBuffer(16);
  const ctl = new Int32Array(sab);
  const workers = [];
  for (let w = 0; w < k; w++) {
    workers.push(new Worker(__filename, { workerData: { kind: 'threads', api, n, chunk, sab, budget } }));
  }
  const next = workers.map((w) => inbox(w, 'threads'));
  const gone = workers.map((w) => ended(w, 'threads'));
  const hello = await Promise.all(next.map((m) => m())); // every worker warmed up and waiting
  let pinned = cpus.length > 0;
  const on = [];
  for (let w = 0; w < k; w++) {
    on.push('-');
    if (!cpus.length) continue;
    const cpu = cpus[w % cpus.length];
    if (!hello[w].tid) {
      pinned = false;
      continue;
    }
    say(`pin ${hello[w].tid} ${cpu}`);
    const reply = await nextLine(10000);
    if (reply === undefined) staleReplies++;
    if (reply === 'ok') on[w] = String(cpu);
    else pinned = false;
  }
  Atomics.store(ctl, GO, 1);
  Atomics.notify(ctl, GO);
  const done = await Promise.all(next.map((m) => m(WAIT_MS + budget.ms)));
  await Promise.all(gone.map((g) => g()));
  const perCall = done.map((m) => m.elapsedNs / m.calls);
  const list = (f) => done.map(f).join(',');
  say(`threads ${APIS[api]} k=${k} n=${n} per_call_ns=${fmt(perCall.reduce((a, b) => a + b, 0) / k)} ` +
    `max_per_call_ns=${fmt(Math.max(...perCall))} chunk=${chunk} pinned=${pinned ? 'requested' : 'no'} ` +
    `cpu=${on.join(',')} least_ns=${list((m) => fmt(m.least))} median_ns=${list((m) => fmt(m.median))} ` +
    `wall_ns=${list((m) => m.elapsedNs)} run_ns=${list(() => '-')} ` +
    `nivcsw=${list((m) => (m.switches < 0 ? '-' : m.switches))}` +
    `${budget.ms > 0 ? ` done=${list((m) => m.calls)}` : ''}${suffix(budget, done.some((m) => m.calls < n))}`);
}

function threadsWorker({ api, n, chunk, sab, budget }) {
  const ctl = new Int32Array(sab);
  warmUp(api, n, budget);
  const chunks = Math.floor(n / chunk), rest = n % chunk;
  const d = new Float64Array(chunks);
  parentPort.postMessage({ tid: threadId() });
  if (Atomics.wait(ctl, GO, 0, WAIT_MS) === 'timed-out') process.exit(1);
  const sw0 = involuntarySwitches();
  const t0 = process.hrtime.bigint();
  let prev = t0, acc = 0, c = 0;
  while (c < chunks) {
    acc += batch(api, chunk);
    const now = process.hrtime.bigint();
    d[c++] = Number(now - prev);
    prev = now;
    if (c < chunks && over(budget, now)) break;
  }
  let calls = c * chunk;
  if (c === chunks) {
    acc += batch(api, rest);
    calls = n;
  }
  const t1 = process.hrtime.bigint();
  const sw1 = involuntarySwitches();
  const made = d.subarray(0, c).sort();
  parentPort.postMessage({
    elapsedNs: Number(t1 - t0), acc, least: made[0] / chunk, median: made[c >> 1] / chunk,
    switches: sw0 < 0 || sw1 < 0 ? -1 : sw1 - sw0, calls,
  });
}

// Each line of stdin one command, run as alone, its answer followed by cb-served.
async function serve() {
  for (let line; (line = await nextLine()) !== null;) {
    if (line === '') continue;
    await run(line.split(' '), true);
    say('cb-served');
  }
}

// One command, from the command line or a line of serve: the one dispatcher of both.
async function run(argv, serving) {
  if (argv.length === 0) fail(USAGE);
  const [cmd, ...args] = argv;
  const shapes = { info: 0, cost: 2, steps: 2, path: 2, stamp: 1, cross: 4, threads: 3, serve: 0 };
  if (!Object.prototype.hasOwnProperty.call(shapes, cmd)) fail(`unknown command '${cmd}'; ${USAGE}`);
  // words beyond: budget_ms on cost, steps and cross; threads' CPU list (without it its workers
  // are not pinned), then budget_ms
  const optional = { cost: 1, steps: 1, cross: 1, threads: 2 }[cmd] || 0;
  if (args.length < shapes[cmd] || args.length > shapes[cmd] + optional) {
    fail(`${cmd} takes ${shapes[cmd]} arguments; ${USAGE}`);
  }
  if (cmd === 'serve') {
    if (serving) fail('serve: already serving');
    return serve();
  }
  if (cmd === 'info') {
    say(`runtime Node.js ${process.version} (V8 ${process.versions.v8})`);
    for (const a of APIS) {
      say(`api ${a} claim_ns=none origin=${a === 'performance.now' ? 'private' : 'clock'} claim_source=none stated`);
    }
    return;
  }
  const api = apiOf(args[0]);
  // budget_ms where the command has it (args[i]), else none
  const budgetAt = (i) => (args.length > i ? budgetOf(number(args[i], 'budget_ms', 1, MAX_BUDGET_MS)) : NO_BUDGET);
  if (cmd === 'cost') {
    const n = number(args[1], 'n', 1, MAX_N);
    cost(api, n, budgetAt(2));
  } else if (cmd === 'steps') {
    const n = number(args[1], 'n', 1, MAX_N);
    steps(api, n, budgetAt(2));
  } else if (cmd === 'path') path(api, number(args[1], 'n', 1, MAX_N));
  else if (cmd === 'stamp') await stamp(api, serving);
  else if (cmd === 'cross') {
    const a = number(args[1], 'cpu_a', 0, 4095), b = number(args[2], 'cpu_b', 0, 4095);
    const rounds = number(args[3], 'rounds', 1, MAX_N);
    await cross(api, a, b, rounds, budgetAt(4));
  } else {
    const k = number(args[1], 'k', 1, 1024), n = number(args[2], 'n', 1, MAX_N);
    const cpus = args.length >= 4 ? parseCpus(args[3]) : [];
    await threads(api, k, n, cpus, budgetAt(4));
  }
}

// A command that throws ends the probe with the reason (Node 12 only warned of a rejected promise
// and went on waiting, so the command hung until clockbench-os's bound)
process.on('unhandledRejection', (e) => fail(`${e && e.stack ? e.stack.split('\n')[0] : e}`, 70));
// stdin's reader and the workers would keep the process alive: it ends when the command is done
if (isMainThread) run(process.argv.slice(2), false).then(() => process.exit(0));
else if (workerData.kind === 'cross') crossWorker(workerData);
else threadsWorker(workerData);
