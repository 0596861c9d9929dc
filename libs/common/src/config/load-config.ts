import type { z } from 'zod';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Validates the environment against a schema; throws one error listing every bad variable. */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const input: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value !== '') input[key] = value;
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = issue.path.join('.') || '(environment)';
    // Empty counts as unset, as above.
    const given = env[name] || undefined;
    const shown =
      given === undefined ? 'unset' : /KEY|TOKEN|SECRET|PASSWORD/.test(name) ? 'given (hidden)' : JSON.stringify(given);
    return `${name}: ${issue.message} (${shown})`;
  });
  throw new ConfigError(problems);
}
