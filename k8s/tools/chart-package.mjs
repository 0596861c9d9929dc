// `npm run chart:package [-- <out dir>]`: packs k8s/charts/uhp-files into <out dir>/uhp-files-<version>.tgz
// (default dist/chart), its version and appVersion those of package.json: the tag `npm run images` gives the
// images, which the chart deploys when image.tag is empty. Refuses when Chart.yaml disagrees with package.json
// (an install from the source tree would then deploy other images than the packaged chart).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HELM_ENV, helmBinary } from './helm.mjs';
import { DIGEST_FILE, migrationsDigest } from './chart-migrations.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
const chart = join(root, 'k8s/charts/uhp-files');
const out = resolve(process.argv[2] ?? join(root, 'dist/chart'));
const fail = (message) => {
  process.stderr.write(`chart:package: ${message}\n`);
  process.exit(1);
};

const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const chartYaml = readFileSync(join(chart, 'Chart.yaml'), 'utf8');
const field = (name) => chartYaml.match(new RegExp(`^${name}:\\s*"?([^"\\s]+)"?`, 'm'))?.[1];
for (const name of ['version', 'appVersion'])
  if (field(name) !== version) fail(`Chart.yaml ${name} is ${field(name)}, package.json's version is ${version}`);
if (readFileSync(DIGEST_FILE, 'utf8') !== migrationsDigest())
  fail('files/migrations.sha256 is stale: run `npm run chart:migrations`');

mkdirSync(out, { recursive: true });
const helm = helmBinary();
execFileSync(helm, ['lint', '--strict', chart, '-f', join(chart, 'ci/minimal-values.yaml')], {
  env: HELM_ENV,
  stdio: ['ignore', 'ignore', 'inherit'],
});
execFileSync(helm, ['package', chart, '--version', version, '--app-version', version, '--destination', out], {
  env: HELM_ENV,
  stdio: ['ignore', 'inherit', 'inherit'],
});
