import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configVariables, renderConfigurationReference } from './config-reference';

const CONFIGURATION_DOC_PATH = join(__dirname, '../../../..', 'docs/configuration.md');

describe('docs/configuration.md, generated from the config schema', () => {
  it('docs/configuration.md is current (else run npm run docs:api)', () => {
    const committed = readFileSync(CONFIGURATION_DOC_PATH, 'utf8');
    expect(committed, 'docs/configuration.md is stale: run npm run docs:api').toBe(renderConfigurationReference());
  });

  it('explains every variable every service and CLI reads', () => {
    const variables = configVariables();
    expect(variables.length).toBeGreaterThan(80);
    const undescribed = variables.flatMap((variable) =>
      variable.forms.filter((form) => !form.entry.description).map((form) => `${variable.name} (${form.readers})`),
    );
    expect(undescribed).toEqual([]);
  });

  it('marks credentials as secrets', () => {
    const credentials = configVariables().filter((variable) =>
      /TOKEN|PASSWORD|SECRET|KEY_ID|API_KEYS|DATABASE_URL/.test(variable.name),
    );
    expect(credentials.length).toBeGreaterThanOrEqual(7);
    const unmarked = credentials.filter((variable) => variable.forms.some((form) => !form.entry.secret));
    expect(unmarked.map((variable) => variable.name)).toEqual([]);
  });

  it('shows a variable whose default differs by service with each reader', () => {
    const host = configVariables().find((variable) => variable.name === 'HOST');
    expect(host?.forms.map((form) => [form.readers, form.entry.defaultText])).toEqual([
      [['gateway'], '`0.0.0.0`'],
      [['storage'], '`127.0.0.1`'],
      [['worker'], '`0.0.0.0`'],
    ]);
  });
});
