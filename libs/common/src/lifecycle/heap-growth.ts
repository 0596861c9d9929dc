import { setFlagsFromString } from 'node:v8';

/**
 * Fixes how far V8 lets the old generation grow after a full collection (UHP_HEAP_GROWING_PERCENT; 0 leaves
 * V8's own heuristic).
 *
 * Why: V8 starts incremental marking as soon as the room left under the old-generation limit is smaller than
 * the young generation (16 MiB semi-spaces once a transfer has grown them), and it sets that limit from a
 * growth factor it derives from GC and allocation speeds, as low as 1.1× the live heap. Our processes hold a
 * ~37 MB live heap and allocate little that lives, so after a collection the limit often lands 4-20 MB above
 * it: marking runs again after every few MB promoted, and a 100 MiB upload cost storage 9-14 mark-compacts
 * (4.9-5.7 CPU s/GiB) in about half of the runs and 1-2 (3.5-3.9 s/GiB) in the others. A fixed factor of 2
 * keeps the room above the young generation's size. The price is at most one live heap of old garbage
 * between collections; peak RSS did not move in the measurements (docs/benchmarks.md, "old-generation growth").
 *
 * `--heap-growing-percent` is a V8 flag Node does not take from NODE_OPTIONS; V8 reads it at every limit
 * it computes, so setting it at start, before the first full collection of any size, is enough.
 */
export function setHeapGrowingPercent(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
