/**
 * Reading V8 .cpuprofile files (`node --cpu-prof`): self time per function within chosen windows of time, and
 * that time sorted into the kinds of work a byte path spends its CPU on. Used by the transfer benchmark's
 * profiled runs (BENCH_CPU_PROFILE=1) and by bench/support/cpu-profile-summary.mjs.
 *
 * A profile's timestamps are microseconds of the machine's monotonic clock, the clock of
 * `process.hrtime.bigint()` in any process on the same machine: a window the benchmark records around a
 * transfer selects exactly that transfer's samples in every service's profile.
 */
import { readFileSync } from 'node:fs';

/** Kinds of work, first match wins: what a byte path's CPU goes to. */
export const KINDS = [
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  ['native, outside JS', (f) => f.functionName === '(program)'],
  ['SHA-256', (f) => /^(update|digest|Hash|_transform)$/.test(f.functionName) && /crypto|hash/i.test(f.url)],
  // Copies of bytes from one Buffer into another: a chunk into a part buffer, Buffer.concat.
  ['buffer copies', (f) => /^(_copyActual|_copy|copy|concat)$/.test(f.functionName) && /(^|:)buffer$/.test(f.url)],
  [
    'socket I/O',
    (f) =>
      /^(writev|writeBuffer|writeUtf8String|writeLatin1String|onStreamRead|readStop|readStart|_writeGeneric|_writev)$/.test(
        f.functionName,
      ),
  ],
  [
    'HTTP and multipart parsing',
    (f) =>
      /_http_common|_http_incoming|_http_outgoing|_http_client|_http_server|undici|busboy|streamsearch/.test(f.url),
  ],
  ['Node streams', (f) => /internal\/streams|node:stream|internal\/webstreams/.test(f.url)],
  ['AWS SDK', (f) => /@aws-sdk|@smithy/.test(f.url)],
  // The services' own code, and the bare hops' (their whole program is the work itself).
  ['own code', (f) => /\/dist\/(apps|libs)\/|bench\/support\/bare-hops\.mjs/.test(f.url)],
  ['framework and other libraries', (f) => /node_modules/.test(f.url)],
  ['other Node internals', (f) => f.url.startsWith('node:') || f.url === '' || /^internal\//.test(f.url)],
];
export const KIND_NAMES = [...KINDS.map(([name]) => name), 'other'];

export function readProfile(file) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  return { ...profile, byId: new Map(profile.nodes.map((node) => [node.id, node])) };
}

/** Calls `visit(nodeId, atMicros, selfMicros)` for every sample that is not idle. */
export function forEachSample(profile, visit) {
  let clock = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    clock += profile.timeDeltas[i] ?? 0;
    const self = Math.max(profile.timeDeltas[i + 1] ?? 0, 0);
    const id = profile.samples[i];
    if (profile.byId.get(id).callFrame.functionName === '(idle)') continue;
    visit(id, clock, self);
  }
}

/** Self time per profile node of the samples inside any of `windows` ([fromMicros, toMicros] pairs). */
export function selfTimeWithin(profile, windows) {
  const self = new Map();
  forEachSample(profile, (id, at, micros) => {
    if (!windows.some(([from, to]) => at >= from && at < to)) return;
    self.set(id, (self.get(id) ?? 0) + micros);
  });
  return self;
}

export const kindOf = (callFrame) => KINDS.find(([, test]) => test(callFrame))?.[0] ?? 'other';

/** Self time summed per kind of work, and per function ("name where"), heaviest first. */
export function breakdown(profile, self) {
  const kinds = new Map();
  const functions = new Map();
  let busy = 0;
  for (const [id, micros] of self) {
    const { callFrame } = profile.byId.get(id);
    busy += micros;
    const kind = kindOf(callFrame);
    kinds.set(kind, (kinds.get(kind) ?? 0) + micros);
    const where = callFrame.url
      ? `${callFrame.url
          .replace(/^.*node_modules\//, '')
          .replace(/^file:\/\/.*\/dist\//, 'dist/')
          .replace(/^.*\/bench\//, 'bench/')}:${callFrame.lineNumber + 1}`
      : '';
    const key = `${callFrame.functionName || '(anonymous)'} ${where}`.trim();
    functions.set(key, (functions.get(key) ?? 0) + micros);
  }
  const heaviest = (map) => [...map].sort((a, b) => b[1] - a[1]);
  return { busy, kinds: heaviest(kinds), functions: heaviest(functions) };
}
