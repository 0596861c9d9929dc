import type { z } from 'zod';
import {
  databaseConfigSchema,
  doctorConfigSchema,
  gatewayConfigSchema,
  storageConfigSchema,
  type VariableMeta,
  workerConfigSchema,
} from './config.schema';

/**
 * docs/configuration.md, made from the config schema: every variable with its type, default, meaning (its zod
 * description) and the programs that read it (the schemas that contain it), so the reference cannot drift from
 * what the services validate. `npm run docs:api` writes it; a unit test fails while the committed page differs.
 */

/** The programs that read configuration, each with its schema, in the order the reference names them. */
export const CONFIG_READERS = [
  ['gateway', gatewayConfigSchema],
  ['storage', storageConfigSchema],
  ['worker', workerConfigSchema],
  ['doctor', doctorConfigSchema],
  ['keys', databaseConfigSchema],
] as const;
export type ConfigReader = (typeof CONFIG_READERS)[number][0];

/** One variable as one reader sees it. */
export interface VariableEntry {
  name: string;
  type: string;
  defaultText: string;
  description: string;
  secret: boolean;
}

interface SchemaDef {
  type: string;
  defaultValue?: unknown;
  innerType?: z.ZodType;
  in?: z.ZodType;
  entries?: Record<string, string>;
}
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;
const metaOf = (schema: z.ZodType): VariableMeta => (schema.meta() ?? {}) as VariableMeta;

const KiB = 1024;
const BYTE_UNITS = [
  ['TiB', KiB ** 4],
  ['GiB', KiB ** 3],
  ['MiB', KiB ** 2],
  ['KiB', KiB],
] as const;
const DURATION_UNITS = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['min', 60_000],
  ['s', 1_000],
] as const;

/** 68719476736 → "64 GiB"; a value no unit divides stays as it is. */
function inUnits(value: number, units: readonly (readonly [string, number])[]): string | undefined {
  for (const [unit, size] of units) if (value >= size && value % size === 0) return `${value / size} ${unit}`;
  return undefined;
}

/** A number as an operator writes it, with its size or duration beside it when the name says which. */
function quantity(name: string, value: number): string {
  const human = name.endsWith('_BYTES')
    ? inUnits(value, BYTE_UNITS)
    : name.endsWith('_MS')
      ? inUnits(value, DURATION_UNITS)
      : name.endsWith('_SECONDS')
        ? inUnits(value * 1000, DURATION_UNITS)
        : undefined;
  return human ? `${value} (${human})` : String(value);
}

/** The schema a value is parsed with before any default, optional or transform wraps it. */
function baseOf(schema: z.ZodType): z.ZodType {
  const def = defOf(schema);
  if ((def.type === 'default' || def.type === 'optional') && def.innerType) return baseOf(def.innerType);
  if (def.type === 'pipe' && def.in) return baseOf(def.in);
  return schema;
}

/** The default a variable takes when unset: a ZodDefault's value, found through pipes that transform it. */
function defaultOf(schema: z.ZodType): { value: unknown } | undefined {
  const def = defOf(schema);
  if (def.type === 'default') return { value: def.defaultValue };
  if (def.type === 'pipe' && def.in) return defaultOf(def.in);
  return undefined;
}

function typeText(name: string, schema: z.ZodType, meta: VariableMeta): string {
  if (meta.type === 'integer') {
    const min = meta.minimum ?? 0;
    const max = meta.maximum ?? Number.MAX_SAFE_INTEGER;
    const show = (value: number) =>
      name.endsWith('_BYTES') ? (inUnits(value, BYTE_UNITS) ?? String(value)) : value.toLocaleString('en-US');
    if (max < Number.MAX_SAFE_INTEGER) return `integer, ${show(min)} to ${show(max)}`;
    return min > 0 ? `integer ≥ ${show(min)}` : 'integer';
  }
  if (meta.type) return meta.type;
  const base = defOf(baseOf(schema));
  if (base.type === 'enum' && base.entries)
    return `one of ${Object.values(base.entries)
      .map((value) => `\`${value}\``)
      .join(', ')}`;
  return base.type;
}

function defaultText(name: string, schema: z.ZodType, meta: VariableMeta): string {
  if (meta.defaultText) return meta.defaultText;
  if (meta.type === 'removed') return '—';
  const found = defaultOf(schema);
  if (!found || found.value === undefined) return 'unset';
  const { value } = found;
  if (typeof value === 'number') return quantity(name, value);
  if (value === '') return 'empty';
  return `\`${String(value)}\``;
}

/** Every variable of one reader's schema. */
export function variablesOf(schema: z.ZodObject): VariableEntry[] {
  return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, field]) => {
    const meta = metaOf(field);
    return {
      name,
      type: typeText(name, field, meta),
      defaultText: defaultText(name, field, meta),
      description: meta.description ?? '',
      secret: meta.secret === true,
    };
  });
}

/** A variable with the readers of each of its forms: most have one form, a few differ by service (HOST). */
export interface ConfigVariable {
  name: string;
  readers: ConfigReader[];
  forms: { entry: VariableEntry; readers: ConfigReader[] }[];
}

export function configVariables(): ConfigVariable[] {
  const byName = new Map<string, ConfigVariable>();
  for (const [reader, schema] of CONFIG_READERS) {
    for (const entry of variablesOf(schema as unknown as z.ZodObject)) {
      const variable = byName.get(entry.name) ?? { name: entry.name, readers: [], forms: [] };
      byName.set(entry.name, variable);
      variable.readers.push(reader);
      const same = variable.forms.find((form) => JSON.stringify(form.entry) === JSON.stringify(entry));
      if (same) same.readers.push(reader);
      else variable.forms.push({ entry, readers: [reader] });
    }
  }
  return [...byName.values()];
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n+/g, ' ');

/** One form's value, or each form's value after the readers it belongs to when they differ. */
function perForm(variable: ConfigVariable, pick: (entry: VariableEntry) => string): string {
  const values = variable.forms.map((form) => pick(form.entry));
  if (new Set(values).size === 1) return values[0];
  return variable.forms.map((form, i) => `${form.readers.join(', ')}: ${values[i]}`).join('<br>');
}

function row(variable: ConfigVariable): string {
  const secret = variable.forms.some((form) => form.entry.secret) ? ' (secret)' : '';
  return `| \`${variable.name}\`${secret} | ${[
    perForm(variable, (entry) => entry.type),
    perForm(variable, (entry) => entry.defaultText),
    variable.readers.join(', '),
    perForm(variable, (entry) => entry.description),
  ]
    .map(cell)
    .join(' | ')} |`;
}

/** Sections by who reads a variable, the widest first: what every service reads, then each service's own. */
const SECTIONS: { title: string; holds: (readers: ConfigReader[]) => boolean }[] = [
  {
    title: 'Every service',
    holds: (readers) => ['gateway', 'storage', 'worker'].every((name) => readers.includes(name as ConfigReader)),
  },
  { title: 'Gateway', holds: (readers) => readers.includes('gateway') },
  { title: 'Storage service', holds: (readers) => readers.includes('storage') },
  { title: 'Worker', holds: (readers) => readers.includes('worker') },
  { title: 'Operator CLIs', holds: () => true },
];

const INTRO = `# Configuration reference

<!-- Generated from libs/common/src/config/config.schema.ts by \`npm run docs:api\`: edit the schema, not this page. -->

Every environment variable the services and the operator CLIs read, made from the one config schema
(\`libs/common/src/config/config.schema.ts\`): a variable's meaning is its description there, and "read by" names
the programs whose schema contains it — \`gateway\`, \`storage\`, \`worker\`, \`doctor\` (\`npm run doctor\`) and
\`keys\` (\`npm run keys\`). Each variable is listed once, in the first section whose program reads it; one whose
type, default or meaning differs between its readers shows each form after the readers it belongs to.
How they are validated, production mode, and the settings outside this schema (\`UHP_DATA_DIR\` of the CLIs,
\`NODE_EXTRA_CA_CERTS\`, \`GLIBC_TUNABLES\`) are in [operations.md](operations.md#configuration).

- Each service validates its variables at start and refuses to boot, listing every bad one. An empty variable
  counts as unset.
- An integer is written in decimal, without units: sizes in bytes, durations in the unit its name ends with
  (\`_MS\`, \`_SECONDS\`). The default column shows the size or duration beside the number.
- A boolean is \`true\`/\`false\` (also \`1\`/\`0\`, \`yes\`/\`no\`).
- **(secret)** marks a value to keep in a secret store (the Helm chart's Secret), never in plain configuration.
`;

export function renderConfigurationReference(): string {
  const variables = configVariables();
  const placed = new Set<string>();
  const parts = [INTRO];
  for (const section of SECTIONS) {
    const rows = variables.filter((variable) => !placed.has(variable.name) && section.holds(variable.readers));
    if (rows.length === 0) continue;
    for (const variable of rows) placed.add(variable.name);
    parts.push(
      `## ${section.title}\n\n| variable | type | default | read by | meaning |\n|---|---|---|---|---|\n${rows
        .map(row)
        .join('\n')}\n`,
    );
  }
  return parts.join('\n');
}
