import { describe, expect, it } from 'vitest';
import { cleanEnvironment, sandboxArgv } from './sandbox';

describe('sandboxArgv', () => {
  it('as root: unshare --net, then prlimit with every limit, then the command', () => {
    expect(
      sandboxArgv(
        '/usr/bin/python3',
        ['bridge.py', 'x'],
        { isolateNetwork: true, addressSpaceBytes: 1024, maxFileBytes: 2048 },
        true,
      ),
    ).toEqual([
      'unshare',
      '--net',
      '--',
      'prlimit',
      '--core=0',
      '--as=1024',
      '--fsize=2048',
      '--',
      '/usr/bin/python3',
      'bridge.py',
      'x',
    ]);
  });

  it('not root: maps the user into a user namespace so unshare --net is allowed', () => {
    expect(sandboxArgv('qpdf', ['--check'], { isolateNetwork: true }, false).slice(0, 4)).toEqual([
      'unshare',
      '--net',
      '--map-root-user',
      '--',
    ]);
  });

  it('without network isolation or an address-space limit, only prlimit wraps the command', () => {
    expect(sandboxArgv('chromium', ['--headless'], { isolateNetwork: false }, true)).toEqual([
      'prlimit',
      '--core=0',
      '--',
      'chromium',
      '--headless',
    ]);
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
