import { Readable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { centralDirectory } from '../../../../test/support/zip';
import { yazlCrc32, ZipWriter } from './zip-writer';

const options = (size: number, compressionLevel = 0) => ({
  compressionLevel,
  mtime: new Date('2026-01-01T00:00:00Z'),
  mode: 0o100644,
  size,
});

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('ZipStream', () => {
  it('writes entries in order, opens at most one ahead, and reports progress', async () => {
    let open = 0;
    let maxOpen = 0;
    const opened: number[] = [];
    const progress = { bytes: 0, files: 0 };
    const zip = new ZipWriter().open({
      onBytes: (n) => (progress.bytes += n),
      onEntryDone: () => (progress.files += 1),
    });
    const datas = [Buffer.alloc(70_000, 1), Buffer.from('text '.repeat(1000)), Buffer.alloc(0), Buffer.alloc(10, 3)];
    datas.forEach((data, i) =>
      zip.add({
        name: i === 1 ? 'ünï.txt' : `f${i}.bin`,
        options: options(data.length, i === 1 ? 3 : 0),
        open: async () => {
          opened.push(i);
          open += 1;
          maxOpen = Math.max(maxOpen, open);
          const stream = Readable.from([data]);
          stream.once('close', () => (open -= 1));
          return stream;
        },
      }),
    );
    zip.end();
    const out = await collect(zip.output);
    const entries = centralDirectory(out);
    expect(entries.map((e) => [e.name, e.method, e.size])).toEqual([
      ['f0.bin', 0, 70_000],
      ['ünï.txt', 8, 5000],
      ['f2.bin', 0, 0],
      ['f3.bin', 0, 10],
    ]);
    expect(entries.every((e) => e.utf8Flag)).toBe(true);
    expect(opened).toEqual([0, 1, 2, 3]);
    expect(maxOpen).toBeLessThanOrEqual(2);
    expect(progress).toEqual({ bytes: 75_010, files: 4 });
  });

  it('carries the CRC-32 of each entry, taken across its chunks by the native CRC yazl was pointed at', async () => {
    // The reference: the textbook bitwise CRC-32 (reflected, polynomial 0xEDB88320), independent of zlib and yazl.
    const referenceCrc32 = (data: Buffer): number => {
      let crc = 0xffffffff;
      for (const byte of data) {
        crc ^= byte;
        for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
      }
      return (crc ^ 0xffffffff) >>> 0;
    };
    const datas = [randomBytes(200_001), Buffer.from('line of text\n'.repeat(5000)), Buffer.alloc(1, 0xff)];
    const crc = vi.spyOn(yazlCrc32, 'unsigned');
    try {
      const zip = new ZipWriter().open();
      datas.forEach((data, i) =>
        zip.add({
          name: `f${i}`,
          options: options(data.length, i === 1 ? 3 : 0),
          // Uneven chunks, so each CRC is carried from one chunk to the next.
          open: async () => Readable.from([data.subarray(0, 7), data.subarray(7, 65_543), data.subarray(65_543)]),
        }),
      );
      zip.end();
      const entries = centralDirectory(await collect(zip.output));
      expect(entries.map((entry) => entry.crc32)).toEqual(datas.map(referenceCrc32));
      // yazl called the instance this module pointed at zlib, not a copy of its own.
      expect(crc).toHaveBeenCalled();
    } finally {
      crc.mockRestore();
    }
  });

  it('of no entries is the 22-byte empty ZIP', async () => {
    const zip = new ZipWriter().open();
    zip.end();
    const out = await collect(zip.output);
    expect(out.length).toBe(22);
    expect(out.readUInt32LE(0)).toBe(0x06054b50);
  });

  it('fails the output when a source breaks, or holds fewer bytes than its size', async () => {
    const broken = new ZipWriter().open();
    broken.add({
      name: 'a.bin',
      options: options(100),
      open: async () =>
        new Readable({
          read() {
            this.destroy(new Error('connection reset'));
          },
        }),
    });
    broken.end();
    await expect(collect(broken.output)).rejects.toThrow('connection reset');

    const short = new ZipWriter().open();
    short.add({ name: 'b.bin', options: options(100), open: async () => Readable.from([Buffer.alloc(50)]) });
    short.end();
    await expect(collect(short.output)).rejects.toThrow(/unexpected number of bytes/);

    const unopenable = new ZipWriter().open();
    unopenable.add({
      name: 'c.bin',
      options: options(1),
      open: async () => {
        throw new Error('storage 404');
      },
    });
    unopenable.end();
    await expect(collect(unopenable.output)).rejects.toThrow('storage 404');
  });
});
