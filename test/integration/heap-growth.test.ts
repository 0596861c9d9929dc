import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const BUILT = join(__dirname, '../../dist/libs/common/src/lifecycle/heap-growth.js');

/**
 * A Node process that calls the built setHeapGrowingPercent after start, as each service's main does, then
 * holds a live heap and promotes short-lived objects through a ring; prints how many full collections it ran.
 */
const CHILD = `
const { PerformanceObserver, constants } = require('node:perf_hooks');
require(process.argv[1]).setHeapGrowingPercent(Number(process.argv[2]));
let majors = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
}).observe({ entryTypes: ['gc'] });
const live = [];
for (let i = 0; i < 300000; i++) live.push({ i, text: 'live ' + i });
const ring = new Array(100000);
for (let i = 0; i < 3000000; i++) ring[i % ring.length] = { i, pair: [i, i + 1] };
setTimeout(() => console.log(live.length > 0 ? majors : -1), 50);
`;
const fullCollections = (percent: number) =>
  Number(execFileSync(process.execPath, ['-e', CHILD, BUILT, String(percent)], { encoding: 'utf8' }).trim());

describe('UHP_HEAP_GROWING_PERCENT', () => {
  it('reaches V8 when set after start: a tight growth collects more often than a factor of 2', () => {
    // Node refusing or ignoring the flag at run time would make the two counts the same.
    const tight = fullCollections(10);
    const doubled = fullCollections(100);
    expect(doubled).toBeGreaterThan(0);
    expect(tight).toBeGreaterThan(doubled);
  });
});
