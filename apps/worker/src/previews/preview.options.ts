import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { IsolationSettings, NetworkPreference } from './sandbox/isolation';

const MiB = 1024 * 1024;

/**
 * Options of the converter library. A plain interface with defaults: a later change maps them from the
 * worker's config schema (PREVIEW_* variables) and passes them in.
 */
export interface PreviewConverterOptions {
  /** Parent of every temp dir the converters make (profiles, inputs, outputs). Wiped per pool member on restart. */
  workDir: string;
  /** Wall-clock limit of one conversion; past it the converter's process group is killed (SIGKILL). */
  timeoutMs: number;
  /** How converter processes are confined (sandbox/sandbox.ts; the mode is chosen at start by sandbox/isolation.ts). */
  sandbox: {
    /** PREVIEW_ISOLATE_NETWORK: prefer (take the strongest that works), require (refuse converters without), off. */
    network: NetworkPreference;
    /** PREVIEW_SANDBOX_UID: a root worker runs converters as this uid and the next ones (one per pool slot …). */
    uidBase: number;
    /** Debian's python3, which runs the launcher. */
    pythonPath: string;
    /** confine.py, shipped beside sandbox.ts (nest-cli.json assets). */
    launcherPath: string;
    /** Tests: try only these modes (see IsolationSettings.only). */
    only?: IsolationSettings['only'];
  };
  office: {
    /** Office documents above this are refused as too_large, before they are fetched. */
    maxInputBytes: number;
    /** Warm soffice processes; each converts one document at a time. */
    poolSize: number;
    /** A process is replaced after this many conversions (LibreOffice grows to ~390 MB over a few hundred). */
    maxConversionsPerProcess: number;
    /** Address-space limit of the bridge and soffice (RLIMIT_AS). */
    addressSpaceBytes: number;
    /** How long a new soffice may take to accept UNO connections. */
    startTimeoutMs: number;
    /** soffice.bin itself: the bridge restarts it once after it populates a new profile (exit 81). */
    sofficePath: string;
    /** Debian's python3 (python3-uno lives in its dist-packages). */
    pythonPath: string;
  };
  chromium: {
    executablePath: string;
    /** HTML, Markdown and text above this are refused as too_large before they are fetched (read into memory). */
    maxInputBytes: number;
    /** The browser is relaunched after this many conversions. */
    maxConversionsPerBrowser: number;
  };
  image: {
    /** Image files above this are refused as too_large, before they are fetched (and read into memory). */
    maxInputBytes: number;
    /** Decoded pixels above this are refused as too_large (a decompression bomb is a few KB). */
    maxInputPixels: number;
    /** Longest side in pixels placed on the page; larger images are scaled down first. */
    maxPlacedPixels: number;
    /** Address-space limit of the renderer process (RLIMIT_AS): Node alone reserves about 1 GiB. */
    addressSpaceBytes: number;
  };
  /** Files written by converter processes are capped at this size (RLIMIT_FSIZE); the largest PDF passed through. */
  maxOutputBytes: number;
  qpdfPath: string;
}

export const DEFAULT_PREVIEW_OPTIONS: PreviewConverterOptions = {
  workDir: join(tmpdir(), `uhp-previews-${process.pid}`),
  timeoutMs: 45_000,
  sandbox: {
    network: 'prefer',
    uidBase: 64_000,
    pythonPath: '/usr/bin/python3',
    launcherPath: join(__dirname, 'sandbox', 'confine.py'),
  },
  office: {
    maxInputBytes: 100 * MiB,
    poolSize: 2,
    maxConversionsPerProcess: 200,
    addressSpaceBytes: 3072 * MiB,
    startTimeoutMs: 30_000,
    sofficePath: '/usr/lib/libreoffice/program/soffice.bin',
    pythonPath: '/usr/bin/python3',
  },
  chromium: { executablePath: '/usr/bin/chromium', maxInputBytes: 20 * MiB, maxConversionsPerBrowser: 500 },
  image: { maxInputBytes: 50 * MiB, maxInputPixels: 100_000_000, maxPlacedPixels: 4000, addressSpaceBytes: 3072 * MiB },
  maxOutputBytes: 512 * MiB,
  qpdfPath: '/usr/bin/qpdf',
};

export type PreviewConverterOverrides = Partial<
  Omit<PreviewConverterOptions, 'sandbox' | 'office' | 'chromium' | 'image'>
> & {
  sandbox?: Partial<PreviewConverterOptions['sandbox']>;
  office?: Partial<PreviewConverterOptions['office']>;
  chromium?: Partial<PreviewConverterOptions['chromium']>;
  image?: Partial<PreviewConverterOptions['image']>;
};

export function resolvePreviewOptions(overrides: PreviewConverterOverrides = {}): PreviewConverterOptions {
  return {
    ...DEFAULT_PREVIEW_OPTIONS,
    ...overrides,
    sandbox: { ...DEFAULT_PREVIEW_OPTIONS.sandbox, ...overrides.sandbox },
    office: { ...DEFAULT_PREVIEW_OPTIONS.office, ...overrides.office },
    chromium: { ...DEFAULT_PREVIEW_OPTIONS.chromium, ...overrides.chromium },
    image: { ...DEFAULT_PREVIEW_OPTIONS.image, ...overrides.image },
  };
}
