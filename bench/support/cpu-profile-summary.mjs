#!/usr/bin/env node
/**
 * Where a process spent its CPU: self time of a V8 .cpuprofile (from `node --cpu-prof`, e.g. through
 * BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=bench/results/prof" on `npm run bench`) grouped into kinds of
 * work, then the heaviest functions.
 *
 *   node bench/support/cpu-profile-summary.mjs FILE.cpuprofile [TOP=15] [CUTS]
 *
 * Idle time is left out of the shares: they are shares of the time the thread was busy. The profile is cut
 * into bursts of work wherever the thread was nearly idle for a second (the benchmark runs the direct side
 * between our upload and our download), and each burst over half a second of CPU is summarised on its own.
 * CUTS, e.g. "34.5,50": also start a new burst at these seconds from the profile's start (when the benchmark's
 * log shows two transfers back to back: cut where the first one ended).
 */
import { basename } from 'node:path';
import { breakdown, forEachSample, readProfile } from './cpu-profile.mjs';

const [file, topArg, cutsArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: cpu-profile-summary.mjs FILE.cpuprofile [TOP] [CUTS]');
  process.exit(2);
}
const top = Number(topArg ?? 15);
const profile = readProfile(file);

const WINDOW_MICROS = 500_000;
const cutWindows = new Set(
  (cutsArg ?? '')
    .split(',')
    .filter(Boolean)
    .map((at) => Math.round((Number(at) * 1e6) / WINDOW_MICROS)),
);

/**
 * Self time per profile node in each burst of work: half-second windows, a window under 20 % busy counts as
 * quiet (timers and health checks keep an idle service from being perfectly idle), and two quiet windows in a
 * row end a burst.
 */
const windows = [];
forEachSample(profile, (id, at, micros) => {
  const window = (windows[Math.floor((at - profile.startTime) / WINDOW_MICROS)] ??= { busy: 0, self: new Map() });
  window.busy += micros;
  window.self.set(id, (window.self.get(id) ?? 0) + micros);
});
const bursts = [];
let current = null;
let quiet = 0;
for (let index = 0; index < windows.length; index++) {
  const window = windows[index] ?? { busy: 0, self: new Map() };
  if (cutWindows.has(index)) current = null;
  if (window.busy < 0.2 * WINDOW_MICROS) {
    quiet++;
    if (quiet >= 2) current = null;
  } else quiet = 0;
  if (!current && window.busy >= 0.2 * WINDOW_MICROS)
    bursts.push((current = { first: index, last: index, self: new Map() }));
  if (!current) continue;
  current.last = index;
  for (const [id, micros] of window.self) current.self.set(id, (current.self.get(id) ?? 0) + micros);
}

const seconds = (micros) => (micros / 1e6).toFixed(2).padStart(7);

function summarise(label, self) {
  const { busy, kinds, functions } = breakdown(profile, self);
  const share = (micros) => `${((100 * micros) / busy).toFixed(1).padStart(5)} %`;
  console.log(`${label}: busy ${seconds(busy).trim()} s`);
  for (const [kind, micros] of kinds) console.log(`  ${share(micros)} ${seconds(micros)} s  ${kind}`);
  console.log('  heaviest functions (self time):');
  for (const [key, micros] of functions.slice(0, top)) console.log(`  ${share(micros)} ${seconds(micros)} s  ${key}`);
}

const total = (self) => [...self.values()].reduce((sum, micros) => sum + micros, 0);
console.log(`${basename(file)}: ${bursts.length} bursts of work`);
for (const [index, burst] of bursts.entries()) {
  if (total(burst.self) < 500_000) continue;
  const at = ((burst.first * WINDOW_MICROS) / 1e6).toFixed(1);
  const wall = (((burst.last - burst.first + 1) * WINDOW_MICROS) / 1e6).toFixed(1);
  summarise(`burst ${index + 1} (from ${at} s, ${wall} s wall)`, burst.self);
}
