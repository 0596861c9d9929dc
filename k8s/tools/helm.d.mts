export function helmBinary(): string;
export const HELM_ENV: NodeJS.ProcessEnv;
