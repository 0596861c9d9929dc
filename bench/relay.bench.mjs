#!/usr/bin/env node
/**
 * What one Node HTTP hop costs on this machine (`npm run bench:relay`): the floor under every relay in the
 * byte path. Three processes on loopback: an origin serving 1 GiB from one reused buffer, a relay that
 * `http.get`s the origin and pipes the response into its own (nothing else: no framework, no logging),
 * and this process reading the relay's answer to the end. Prints, for BENCH_RELAY_REPS (3) repetitions, the
 * relay's CPU seconds per GiB (utime + stime from /proc) and its ratio to the reader's own CPU per GiB in the
 * same run (a plain HTTP read of the same bytes: the baseline). The gateway on a download and the storage
 * service on a download (plus its S3 client) do this much work at least, per byte.
 *
 * Prints its section of docs/benchmarks.md; `--write-docs` (or BENCH_WRITE_DOCS=1) also writes it there.
 * A measurement, not a test; it starts no service and needs no S3.
 */
import { fork } from 'node:child_process';
import http from 'node:http';

const role = ['origin', 'relay'].includes(process.argv[2]) ? process.argv[2] : 'reader';
const GiB = 1024 ** 3;
const ORIGIN_PORT = Number(process.env.BENCH_PORT_BASE ?? 19080) + 20;
const RELAY_PORT = ORIGIN_PORT + 1;
const CHUNK = Buffer.alloc(64 * 1024, 7);

if (role === 'origin') {
  http
    .createServer((req, res) => {
      res.writeHead(200, { 'content-length': GiB });
      let sent = 0;
      const pump = () => {
        while (sent < GiB) {
          sent += CHUNK.length;
          if (!res.write(CHUNK)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    })
    .listen(ORIGIN_PORT, '127.0.0.1', () => process.send('up'));
} else if (role === 'relay') {
  const agent = new http.Agent({ keepAlive: true });
  http
    .createServer((req, res) => {
      http.get(`http://127.0.0.1:${ORIGIN_PORT}/`, { agent }, (upstream) => {
        res.writeHead(200, { 'content-length': upstream.headers['content-length'] });
        upstream.pipe(res);
      });
    })
    .listen(RELAY_PORT, '127.0.0.1', () => process.send('up'));
} else {
  // Only here: the origin and the relay stay bare Node (the bench support module loads the AWS SDK, whose heap would
  // make every garbage collection in them dearer).
  const { CLK_TCK, procStat } = await import('./support/stack.mjs');
  const { commandOf, machineLine, reportBlock } = await import('./support/benchmarks.mjs');
  const rows = [];
  const self = new URL(import.meta.url).pathname;
  const origin = fork(self, ['origin']);
  const relay = fork(self, ['relay']);
  try {
    await Promise.all([origin, relay].map((child) => new Promise((resolve) => child.once('message', resolve))));
    console.log(`relay bench: ${machineLine()}`);
    const reps = Number(process.env.BENCH_RELAY_REPS ?? 3);
    for (let rep = 1; rep <= reps; rep++) {
      const before = {
        relay: procStat(relay.pid).ticks,
        origin: procStat(origin.pid).ticks,
        client: process.cpuUsage(),
      };
      const started = performance.now();
      const bytes = await new Promise((resolve, reject) =>
        http
          .get(`http://127.0.0.1:${RELAY_PORT}/`, (res) => {
            let n = 0;
            res.on('data', (chunk) => (n += chunk.length));
            res.on('end', () => resolve(n));
            res.on('error', reject);
          })
          .on('error', reject),
      );
      if (bytes !== GiB) throw new Error(`relay answered ${bytes} bytes, expected ${GiB}`);
      const seconds = (performance.now() - started) / 1000;
      const client = process.cpuUsage(before.client);
      const relayCpu = (procStat(relay.pid).ticks - before.relay) / CLK_TCK;
      const readerCpu = (client.user + client.system) / 1e6;
      const originCpu = (procStat(origin.pid).ticks - before.origin) / CLK_TCK;
      rows.push([
        String(rep),
        `**${(relayCpu / readerCpu).toFixed(2)}**`,
        relayCpu.toFixed(2),
        readerCpu.toFixed(2),
        originCpu.toFixed(2),
        (GiB / 1e6 / seconds).toFixed(0),
      ]);
      console.log(`rep ${rep}: relay / reader ${(relayCpu / readerCpu).toFixed(2)}`);
    }
    reportBlock('relay', { machine: machineLine(), command: commandOf('relay'), rows });
  } finally {
    origin.kill();
    relay.kill();
  }
}
