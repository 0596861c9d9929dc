import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  cleanEnvironment,
  ProcessRunner,
  SANDBOX_UIDS,
  uidOf,
  type FilesystemIsolation,
  type IsolationMode,
  type LauncherSettings,
  type NetworkIsolation,
} from './sandbox';

const execFileAsync = promisify(execFile);

/**
 * PREVIEW_ISOLATE_NETWORK: `prefer` (true, the default) takes the strongest network isolation that works and
 * runs converters without one, with a warning, when none does; `require` refuses to run converters then;
 * `off` (false) skips it (the deployment isolates the converters' network itself).
 */
export type NetworkPreference = 'prefer' | 'require' | 'off';

export interface IsolationSettings {
  network: NetworkPreference;
  /** The first uid of the converters (`uid` mode): PREVIEW_SANDBOX_UID. */
  uidBase: number;
  launcher: LauncherSettings;
  /** Where the probe runs: beneath the converters' work dir, so it meets the same directories they will. */
  probeDir: string;
  /**
   * Only these modes are tried (tests: a root host can run the container's mode, seccomp + Landlock, or show
   * what a converter reaches with no filesystem isolation). Unset: all of them, strongest first.
   */
  only?: { network?: readonly NetworkIsolation[]; filesystem?: readonly FilesystemIsolation[] };
}

/** What confine.py --self-test saw from inside a confinement. */
interface SelfTest {
  uid: number;
  landlock: number;
  tcp: string;
  udp: string;
  canary: string;
  own: string;
  tmpSocket: string;
  tmpSocketPath?: string;
  userns: boolean;
}

interface FilesystemCandidate {
  filesystem: FilesystemIsolation;
  landlock: boolean;
}

/** CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_KILL, CAP_SETGID, CAP_SETUID: to run and manage converters as uids. */
const UID_MODE_CAPABILITIES = [0, 1, 3, 5, 6, 7];

async function effectiveCapabilities(): Promise<bigint> {
  const status = await readFile('/proc/self/status', 'utf8').catch(() => '');
  const hex = /^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1];
  return hex ? BigInt(`0x${hex}`) : 0n;
}

export function describeIsolation(mode: IsolationMode): string {
  return (
    `network=${mode.network} filesystem=${mode.filesystem} landlock=${mode.landlockAbi} ` +
    `chromiumSandbox=${mode.chromiumSandbox}${mode.refused ? ' (converters refused)' : ''}`
  );
}

const firstLine = (text: string, max = 200) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .find(Boolean)
    ?.slice(0, max) ?? '';

/**
 * Decides, once at start, how converter processes are confined here: for each candidate mode, strongest first,
 * a tiny probe process is started exactly as a converter would be, and reports from inside what it can reach (a
 * TCP listener of the worker's on 127.0.0.1, a file of "another job", its own directory, a Unix socket in /tmp,
 * a user namespace for Chromium). The first mode whose probe reaches nothing it should not is the mode.
 */
export async function detectIsolation(settings: IsolationSettings): Promise<IsolationMode> {
  const notes: string[] = [];
  const isRoot = process.getuid?.() === 0;
  const capabilities = await effectiveCapabilities();
  const canSwitchUid = UID_MODE_CAPABILITIES.every((bit) => (capabilities >> BigInt(bit)) & 1n);
  const base: IsolationMode = {
    network: 'none',
    filesystem: 'none',
    landlockAbi: 0,
    chromiumSandbox: false,
    userNamespace: !isRoot,
    uidBase: settings.uidBase,
    notes,
  };

  let landlockAbi: number;
  try {
    const { stdout } = await execFileAsync(
      settings.launcher.pythonPath,
      ['-I', '-S', settings.launcher.launcherPath, '--abi'],
      { timeout: 10_000, env: cleanEnvironment('/') },
    );
    landlockAbi = Number(stdout.trim()) || 0;
  } catch (error) {
    const reason = `the converter launcher does not run (${settings.launcher.pythonPath}): ${
      error instanceof Error ? firstLine(error.message) : String(error)
    }`;
    return { ...base, refused: reason, notes: [reason] };
  }
  if (!landlockAbi) notes.push('Landlock is not available in this kernel');
  if (!canSwitchUid)
    notes.push('not root (no CAP_SETUID/CAP_SETGID/CAP_CHOWN/CAP_KILL): converters keep the worker uid');

  const networks = (settings.network === 'off' ? ['none'] : ['namespace', 'seccomp', 'none']).filter(
    (network): network is NetworkIsolation =>
      settings.only?.network ? settings.only.network.includes(network as NetworkIsolation) : true,
  );
  const filesystems: FilesystemCandidate[] = [
    ...(canSwitchUid && landlockAbi ? [{ filesystem: 'uid' as const, landlock: true }] : []),
    ...(canSwitchUid ? [{ filesystem: 'uid' as const, landlock: false }] : []),
    ...(landlockAbi ? [{ filesystem: 'landlock' as const, landlock: true }] : []),
    { filesystem: 'none' as const, landlock: false },
  ].filter((candidate) => settings.only?.filesystem?.includes(candidate.filesystem) ?? true);

  const connections = { count: 0 };
  const listener = createServer((socket) => {
    connections.count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const port = (listener.address() as { port: number }).port;
  const own = join(settings.probeDir, 'own');
  const other = join(settings.probeDir, 'other');
  const canary = join(other, 'job-file');
  const identity = { uidOffset: SANDBOX_UIDS.probe, writable: [own], tmpSockets: true };
  try {
    await rm(settings.probeDir, { recursive: true, force: true });
    await mkdir(other, { recursive: true, mode: 0o700 });
    await chmod(settings.probeDir, canSwitchUid ? 0o711 : 0o700);
    await writeFile(canary, 'another job', { mode: 0o600 });

    for (const network of networks) {
      for (const candidate of filesystems) {
        const mode: IsolationMode = {
          ...base,
          network,
          filesystem: candidate.filesystem,
          landlockAbi: candidate.landlock ? landlockAbi : 0,
        };
        const label =
          `network=${network} filesystem=${candidate.filesystem}` +
          (candidate.landlock && candidate.filesystem === 'uid' ? '+landlock' : '');
        const runner = new ProcessRunner(mode, settings.launcher);
        const before = connections.count;
        let report: SelfTest;
        try {
          await runner.makeOwnDir(own, identity);
          const result = await runner.run({
            command: 'true',
            args: [],
            identity,
            limits: {},
            launcherArgs: ['--self-test', '--port', String(port), '--canary', canary, '--own', own],
            env: cleanEnvironment(own),
            cwd: '/',
            timeoutMs: 15_000,
          });
          if (result.code !== 0) {
            notes.push(`${label}: ${firstLine(result.stderr) || `exit ${result.code ?? result.signal}`}`);
            // The namespace itself was refused: no filesystem variant will do better.
            if (network === 'namespace' && /^unshare:/m.test(result.stderr)) break;
            continue;
          }
          report = JSON.parse(firstLine(result.stdout, Infinity)) as SelfTest;
        } catch (error) {
          notes.push(`${label}: ${error instanceof Error ? firstLine(error.message) : String(error)}`);
          continue;
        }
        if (report.tmpSocketPath) await rm(report.tmpSocketPath, { force: true }).catch(() => undefined);
        const networkHeld =
          network === 'none' || (report.tcp !== 'ok' && report.udp !== 'ok' && connections.count === before);
        const filesHeld =
          report.own === 'ok' &&
          report.tmpSocket === 'ok' &&
          (candidate.filesystem === 'none' || report.canary !== 'ok') &&
          (candidate.filesystem !== 'uid' || report.uid === uidOf(mode, identity)) &&
          (!candidate.landlock || report.landlock > 0);
        if (!networkHeld || !filesHeld) {
          notes.push(
            `${label}: the probe reached ${[
              !networkHeld && 'the network',
              !filesHeld && 'files it must not (or not its own)',
            ]
              .filter(Boolean)
              .join(' and ')} (tcp ${report.tcp}, another job's file ${report.canary}, own dir ${report.own}, ` +
              `socket in /tmp ${report.tmpSocket})`,
          );
          continue;
        }
        mode.chromiumSandbox = report.userns && report.uid !== 0;
        if (!mode.chromiumSandbox)
          notes.push('Chromium runs with --no-sandbox: no user namespaces for a non-root uid here');
        if (network === 'none' && settings.network !== 'off')
          notes.push('no network isolation works here: the deployment must keep the preview workers off the network');
        if (network === 'none' && settings.network === 'require')
          mode.refused = 'converters refused: PREVIEW_ISOLATE_NETWORK=required and no network isolation works here';
        return mode;
      }
    }
    return { ...base, refused: `no converter process could be started: ${notes.join('; ')}` };
  } finally {
    listener.close();
    await rm(settings.probeDir, { recursive: true, force: true }).catch(() => undefined);
  }
}
