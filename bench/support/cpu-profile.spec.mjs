import { describe, expect, it } from 'vitest';
import { breakdown, kindOf, selfTimeWithin } from './cpu-profile.mjs';

const frame = (functionName, url = '') => ({ functionName, url, lineNumber: 0, columnNumber: 0, scriptId: '0' });
const FRAMES = {
  1: frame('(root)'),
  2: frame('(idle)'),
  3: frame('(garbage collector)'),
  4: frame('update', 'node:internal/crypto/hash'),
  5: frame('_copyActual', 'node:buffer'),
  6: frame('uploadStream', 'file:///srv/uhp/dist/apps/storage/src/objects/multipart-upload.js'),
  7: frame('feed', 'file:///srv/uhp/node_modules/streamsearch/lib/sbmh.js'),
  8: frame('handle', 'file:///srv/uhp/node_modules/@nestjs/core/router/router-proxy.js'),
};

/** A profile whose sample i is taken at 1 s + i ms and lasts 1 ms (the delta to the next sample). */
function profileOf(sampleIds) {
  const nodes = Object.entries(FRAMES).map(([id, callFrame]) => ({ id: Number(id), callFrame }));
  return {
    startTime: 1_000_000,
    samples: sampleIds,
    timeDeltas: sampleIds.map((_, i) => (i === 0 ? 0 : 1000)),
    nodes,
    byId: new Map(nodes.map((node) => [node.id, node])),
  };
}

describe('cpu-profile', () => {
  it('sorts frames into the kinds of work of a byte path', () => {
    expect(kindOf(FRAMES[3])).toBe('garbage collection');
    expect(kindOf(FRAMES[4])).toBe('SHA-256');
    expect(kindOf(FRAMES[5])).toBe('buffer copies');
    expect(kindOf(FRAMES[6])).toBe('own code');
    expect(kindOf(FRAMES[7])).toBe('HTTP and multipart parsing');
    expect(kindOf(FRAMES[8])).toBe('framework and other libraries');
    expect(kindOf(frame('writev'))).toBe('socket I/O');
  });

  it('counts only the samples inside the windows, and never idle time', () => {
    // Samples at 1.000, 1.001, ... 1.009 s: GC, hash, hash, idle, copy | own, own, idle, busboy, GC
    // (the last one has no length).
    const profile = profileOf([3, 4, 4, 2, 5, 6, 6, 2, 7, 3]);
    const first = breakdown(profile, selfTimeWithin(profile, [[1_000_000, 1_005_000]]));
    expect(first.busy).toBe(4000);
    expect(Object.fromEntries(first.kinds)).toEqual({
      'garbage collection': 1000,
      'SHA-256': 2000,
      'buffer copies': 1000,
    });

    const both = breakdown(
      profile,
      selfTimeWithin(profile, [
        [1_005_000, 1_009_000],
        [1_001_000, 1_002_000],
      ]),
    );
    expect(both.busy).toBe(4000);
    expect(Object.fromEntries(both.kinds)).toEqual({
      'own code': 2000,
      'HTTP and multipart parsing': 1000,
      'SHA-256': 1000,
    });
    expect(both.functions[0]).toEqual(['uploadStream dist/apps/storage/src/objects/multipart-upload.js:1', 2000]);
  });
});
