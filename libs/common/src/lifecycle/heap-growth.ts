import { setFlagsFromString } from 'node:v8';

/**
 * Fixes how far V8 lets the old generation grow after a full collection (UHP_HEAP_GROWING_PERCENT; 0 leaves
 * V8's own heuristic).
 *
 * Why: V8 starts incremental marking as soon as the room left under the old-generation limit is smaller than
 * the young generation (16 MiB semi-spaces once a transfer has grown them), and it sets that limit from a
 * growth factor it derives from GC and allocation speeds, as low as 1.1× the live heap. Our processes hold a
 * small live heap and allocate little that lives, so after a collection the limit often lands only a few MB
 * above it: marking runs again after every few MB promoted, and a transfer pays for mark-compact after
 * mark-compact in CPU. A fixed factor of 2 makes them rare and keeps their number the same from run to run.
 * The price is at most one live heap of old garbage between collections, which does not raise peak RSS
 * (`npm run bench:memory` measures the peak RSS).
 *
 * `--heap-growing-percent` is a V8 flag Node does not take from NODE_OPTIONS; V8 reads it at every limit
 * it computes, so setting it once at start is enough.
 */
export function setHeapGrowingPercent(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
