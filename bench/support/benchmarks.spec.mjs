import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BENCHMARKS,
  blocksOf,
  commandOf,
  INTRO,
  parseBlock,
  renderBlock,
  wantsDocs,
  writeBlock,
} from './benchmarks.mjs';

const ROOT = join(import.meta.dirname, '..', '..');
const PAGE = readFileSync(join(ROOT, 'docs', 'benchmarks.md'), 'utf8');
const SCRIPTS = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;
const BENCH_SCRIPTS = Object.keys(SCRIPTS).filter((name) => name === 'bench' || name.startsWith('bench:'));

/** Throws unless `page` is exactly the intro and every benchmark's block, each as its generator renders it. */
function checkPage(page) {
  const blocks = blocksOf(page);
  for (const b of BENCHMARKS) if (!blocks.has(b.name)) throw new Error(`no block "${b.name}"`);
  for (const b of BENCHMARKS) {
    const { text } = blocks.get(b.name);
    if (renderBlock(b.name, parseBlock(b.name, text)) !== text)
      throw new Error(`block "${b.name}" is not what bench/${b.file} writes`);
  }
  const expected = `${[INTRO, ...BENCHMARKS.map((b) => blocks.get(b.name).text)].join('\n\n')}\n`;
  if (page !== expected) throw new Error('text outside the intro and the generated blocks, or blocks out of order');
}

const sample = (name) => {
  const b = BENCHMARKS.find((x) => x.name === name);
  return {
    machine: '2 cores (Test CPU), 4.0 GiB RAM, Node v20.0.0',
    command: `npm run ${b.script} -- --write-docs`,
    rows: [b.columns.map((_, i) => `c${i}`)],
    notes: (b.notes ?? []).map((_, i) => `note ${i}`),
  };
};

describe('docs/benchmarks.md', () => {
  it('is the intro and one generated block per benchmark, nothing else', () => {
    expect(() => checkPage(PAGE)).not.toThrow();
  });

  it('stays short: history lives in git, not on the page', () => {
    expect(PAGE.split('\n').length).toBeLessThan(300);
  });

  it('has a block for every bench script in package.json, and every block names a script that exists', () => {
    for (const script of BENCH_SCRIPTS) expect(BENCHMARKS.map((b) => b.script)).toContain(script);
    for (const b of BENCHMARKS) expect(SCRIPTS[b.script], `npm script ${b.script}`).toBeDefined();
  });

  it('names in each block the npm command that rewrites it, and holds at least one row', () => {
    for (const b of BENCHMARKS) {
      const { command, rows } = parseBlock(b.name, blocksOf(PAGE).get(b.name).text);
      expect(command).toContain(`npm run ${b.script} -- --write-docs`);
      if (b.env) expect(command).toContain(b.env);
      expect(rows.length).toBeGreaterThan(0);
    }
  });

  it('has each block written by its own benchmark script', () => {
    for (const b of BENCHMARKS) {
      const source = readFileSync(join(ROOT, 'bench', b.file), 'utf8');
      expect(source).toMatch(new RegExp(`reportBlock\\(\\s*'${b.name}'`));
    }
  });
});

describe('the page check', () => {
  const edit = (from, to) => {
    expect(PAGE).toContain(from);
    return PAGE.replace(from, to);
  };

  it('fails on narration between the blocks', () => {
    expect(() => checkPage(edit('<!-- bench:archive:end -->', '<!-- bench:archive:end -->\n\nA finding.'))).toThrow();
  });

  it('fails on a paragraph added inside a block', () => {
    expect(() => checkPage(edit('**Command:**', 'Run on a quiet day.\n\n**Command:**'))).toThrow();
  });

  it('fails on a block missing, or out of order', () => {
    const { text } = blocksOf(PAGE).get('relay');
    expect(() => checkPage(PAGE.replace(`\n\n${text}`, ''))).toThrow(/no block "relay"/);
    const listing = blocksOf(PAGE).get('listing').text;
    expect(() => checkPage(PAGE.replace(listing, 'X').replace(text, listing).replace('X', text))).toThrow();
  });

  it('fails on a block whose description or columns its generator no longer writes (stale)', () => {
    const [b] = BENCHMARKS;
    expect(() => checkPage(edit(b.columns.join(' | '), b.columns.slice(1).join(' | ')))).toThrow();
    expect(() => checkPage(edit(b.title, `${b.title} (old)`))).toThrow();
  });

  it('fails on an old-style block with a date line or no command', () => {
    const someDay = new Date(0).toISOString().slice(0, 10);
    expect(() => checkPage(edit('**Command:**', `**Run:** ${someDay},`))).toThrow();
  });

  it('fails on a note the benchmark does not declare', () => {
    expect(() => checkPage(edit('- Worker at rest:', '- Reading: all good.\n- Worker at rest:'))).toThrow();
  });
});

describe('renderBlock and parseBlock', () => {
  it('read back what they write, for every benchmark', () => {
    for (const b of BENCHMARKS) {
      const parts = sample(b.name);
      expect(parseBlock(b.name, renderBlock(b.name, parts))).toEqual(parts);
    }
  });

  it('keep a | inside a cell', () => {
    const parts = { ...sample('relay'), rows: [['a | b', '1', '2', '3', '4', '5']] };
    expect(parseBlock('relay', renderBlock('relay', parts)).rows).toEqual(parts.rows);
  });

  it('refuse a row that does not fit the columns, and notes the benchmark does not declare', () => {
    expect(() => renderBlock('relay', { ...sample('relay'), rows: [['1', '2']] })).toThrow(/2 cells for 6 columns/);
    expect(() => renderBlock('relay', { ...sample('relay'), notes: ['extra'] })).toThrow(/1 notes/);
  });
});

describe('writeBlock', () => {
  it('puts a block in its place on the page, keeping the others, and starts a page that is missing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-docs-'));
    try {
      const file = join(dir, 'benchmarks.md');
      writeBlock('listing', sample('listing'), file);
      writeBlock('transfer', sample('transfer'), file);
      writeBlock('listing', { ...sample('listing'), machine: '1 core (Other), 1.0 GiB RAM, Node v22.0.0' }, file);
      const page = readFileSync(file, 'utf8');
      expect([...blocksOf(page).keys()]).toEqual(['transfer', 'listing']);
      expect(page.startsWith(`${INTRO}\n\n`)).toBe(true);
      expect(page).toContain('1 core (Other)');
      expect(page).not.toContain('Test CPU), 4.0 GiB RAM, Node v20.0.0.\n\n**Command:** `npm run bench:listing');
      writeFileSync(file, `${page}\nNarration that the next run drops.\n`);
      writeBlock('relay', sample('relay'), file);
      expect(readFileSync(file, 'utf8')).not.toContain('Narration');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('wantsDocs and commandOf', () => {
  it('name the environment the run was started with, not what it set for its children later', () => {
    process.env.BENCH_NODE_ARGS_SET_LATER = '--cpu-prof';
    try {
      expect(commandOf('relay', { argv: ['node', 'x.mjs', '--write-docs'] })).not.toContain('SET_LATER');
    } finally {
      delete process.env.BENCH_NODE_ARGS_SET_LATER;
    }
  });

  it('write the page only when asked', () => {
    expect(wantsDocs(['node', 'x.mjs'], {})).toBe(false);
    expect(wantsDocs(['node', 'x.mjs', '1GiB'], { BENCH_WRITE_DOCS: '0' })).toBe(false);
    expect(wantsDocs(['node', 'x.mjs', '--write-docs'], {})).toBe(true);
    expect(wantsDocs(['node', 'x.mjs'], { BENCH_WRITE_DOCS: '1' })).toBe(true);
  });

  it('name the settings a run used, not where it ran', () => {
    const env = {
      BENCH_REPS: '4',
      BENCH_SERVICE_ENV: 'A=1,B=2',
      BENCH_NODE_ARGS: '--cpu-prof --cpu-prof-dir=x',
      BENCH_PORT_BASE: '19180',
      BENCH_DATABASE_URL: 'postgresql://x',
      BENCH_WRITE_DOCS: '1',
      PATH: '/usr/bin',
    };
    expect(commandOf('transfer', { argv: ['node', 'x.mjs', '--write-docs', '1GiB'], env })).toBe(
      "BENCH_NODE_ARGS='--cpu-prof --cpu-prof-dir=x' BENCH_REPS=4 BENCH_SERVICE_ENV=A=1,B=2 " +
        'npm run bench -- --write-docs 1GiB',
    );
  });
});
