import { describe, expect, it } from 'vitest';
import { cleanEnvironment, sandboxArgv, SANDBOX_UIDS, type IsolationMode } from './sandbox';

const launcher = { pythonPath: '/usr/bin/python3', launcherPath: '/app/confine.py' };
const mode = (overrides: Partial<IsolationMode>): IsolationMode => ({
  network: 'namespace',
  filesystem: 'uid',
  landlockAbi: 7,
  chromiumSandbox: true,
  userNamespace: false,
  uidBase: 64_000,
  notes: [],
  ...overrides,
});
const office = {
  command: '/usr/bin/python3',
  args: ['bridge.py', 'x'],
  identity: {
    uidOffset: SANDBOX_UIDS.officeSlot(1),
    writable: ['/w/profile', '/w/io'],
    readable: ['/app/bridge.py'],
    tmpSockets: true,
  },
  limits: { addressSpaceBytes: 1024, maxFileBytes: 2048 },
};

describe('sandboxArgv', () => {
  it('root with namespaces and Landlock: unshare --net, then the launcher drops to the slot uid and confines', () => {
    expect(sandboxArgv(office, mode({}), launcher)).toEqual([
      'unshare',
      '--net',
      '--',
      '/usr/bin/python3',
      '-I',
      '-S',
      '/app/confine.py',
      '--uid',
      '64001',
      '--gid',
      '64001',
      '--landlock',
      '--rw',
      '/w/profile',
      '--rw',
      '/w/io',
      '--ro',
      '/app/bridge.py',
      '--tmp-sockets',
      '--no-tcp',
      '--as',
      '1024',
      '--fsize',
      '2048',
      '--',
      '/usr/bin/python3',
      'bridge.py',
      'x',
    ]);
  });

  it('not root: the network namespace comes with a user namespace that keeps the uid (not root inside)', () => {
    const argv = sandboxArgv(office, mode({ filesystem: 'landlock', userNamespace: true }), launcher);
    expect(argv.slice(0, 5)).toEqual(['unshare', '--net', '--user', '--map-current-user', '--']);
    expect(argv).not.toContain('--uid');
    expect(argv).toContain('--landlock');
  });

  it('in a container (no namespaces): the seccomp filter and Landlock, no uid switch', () => {
    const argv = sandboxArgv(office, mode({ network: 'seccomp', filesystem: 'landlock' }), launcher);
    expect(argv[0]).toBe('/usr/bin/python3');
    expect(argv).toEqual(expect.arrayContaining(['--landlock', '--no-tcp', '--seccomp-nonet']));
    expect(argv).not.toContain('unshare');
  });

  it('nothing available: only the launcher (limits, no_new_privs) and the command; no TCP rule without isolation', () => {
    const argv = sandboxArgv(
      { command: 'chromium', args: ['--headless'], identity: { uidOffset: 16, writable: ['/h'] }, limits: {} },
      mode({ network: 'none', filesystem: 'none', landlockAbi: 0 }),
      launcher,
    );
    expect(argv).toEqual(['/usr/bin/python3', '-I', '-S', '/app/confine.py', '--', 'chromium', '--headless']);
    const landlockOnly = sandboxArgv(
      { command: 'chromium', args: [], identity: { uidOffset: 16, writable: ['/h'], procWrite: true }, limits: {} },
      mode({ network: 'none', filesystem: 'landlock' }),
      launcher,
    );
    expect(landlockOnly).toEqual(expect.arrayContaining(['--landlock', '--rw', '/h', '--proc-write']));
    expect(landlockOnly).not.toContain('--no-tcp');
  });
});

describe('cleanEnvironment', () => {
  it('carries nothing of the worker environment', () => {
    process.env.UHP_SPEC_SECRET = 'secret';
    const env = cleanEnvironment('/work/profile');
    delete process.env.UHP_SPEC_SECRET;
    expect(env).toEqual({
      PATH: '/usr/bin:/bin',
      HOME: '/work/profile',
      TMPDIR: '/work/profile',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
    });
  });
});
