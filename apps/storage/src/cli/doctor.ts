/**
 * The consistency checker, for operators (docs/operations.md, "Consistency checker"):
 *   npm run doctor [-- --repair] [--json] [--grace-seconds N]
 *   node dist/apps/storage/src/cli/doctor.js …   (in the storage image)
 * Reads the storage service's S3 settings and DATABASE_DIRECT_URL, else DATABASE_URL, from the environment, and
 * the Redis settings when they are there (to report the topology); what it leaves unset comes from the local
 * stack's `.data/local.env` when there is one (written by `npm start`; libs/common local-env).
 * Exit 0: nothing found (or everything found was repaired); 1: findings remain; 2: bad arguments or
 * configuration; 3: the check itself failed.
 */
import { applyLocalEnv, doctorConfigSchema, loadConfig, type DoctorConfig } from '@app/common';
import { openConsistency } from '@app/db';
import { BucketInventoryClient } from '../doctor/bucket-inventory.client';
import { describeFinding, horizonsOf, type Finding } from '../doctor/consistency-checks';
import { DoctorService, type RepairOutcome } from '../doctor/doctor.service';
import { describeTopology, TopologyProbe, type TopologyReport } from '../doctor/topology.probe';

const USAGE = 'usage: doctor [--repair] [--json] [--grace-seconds N]';

export interface DoctorArgs {
  repair: boolean;
  json: boolean;
  graceSeconds?: number;
}

export function parseDoctorArgs(args: string[]): DoctorArgs | string {
  const parsed: DoctorArgs = { repair: false, json: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--repair') parsed.repair = true;
    else if (arg === '--json') parsed.json = true;
    else if (arg === '--grace-seconds' || arg.startsWith('--grace-seconds=')) {
      const value = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : args[++i];
      if (!value || !/^\d+$/.test(value)) return `--grace-seconds wants a whole number of seconds\n${USAGE}`;
      parsed.graceSeconds = Number(value);
    } else return `unknown argument ${JSON.stringify(arg)}\n${USAGE}`;
  }
  return parsed;
}

export interface DoctorReport {
  findings: Finding[];
  repairs: RepairOutcome[];
  /** Findings a repair did not settle. */
  remaining: number;
  /** The setup found: Postgres directly or through a pooler; Redis alone, under Sentinel or a Cluster. */
  topology: TopologyReport;
}

/** One run: check, and with `repair`, repair and check again. */
export async function runDoctor(config: DoctorConfig, args: DoctorArgs, now = new Date()): Promise<DoctorReport> {
  const database = openConsistency(config.DATABASE_DIRECT_URL ?? config.DATABASE_URL);
  const bucket = new BucketInventoryClient(config);
  try {
    const doctor = new DoctorService(database.consistency, database.objects, bucket);
    const horizons = horizonsOf(now, {
      graceSeconds: args.graceSeconds ?? config.DOCTOR_GRACE_SECONDS,
      abandonedUploadSeconds: config.STORAGE_ABANDONED_UPLOAD_SECONDS,
      staleUploadSeconds: config.STALE_UPLOAD_SECONDS,
    });
    const topology = await new TopologyProbe(config).report();
    const findings = await doctor.check(horizons);
    if (!args.repair || findings.length === 0) return { findings, repairs: [], remaining: findings.length, topology };
    const repairs = await doctor.repair(findings, horizons);
    const after = await doctor.check(horizons);
    return { findings, repairs, remaining: after.length, topology };
  } finally {
    bucket.destroy();
    await database.close();
  }
}

function print(report: DoctorReport, args: DoctorArgs, out: (line: string) => void): void {
  if (args.json)
    return out(JSON.stringify(report, (_key, value) => (typeof value === 'bigint' ? Number(value) : value)));
  for (const line of describeTopology(report.topology)) out(line);
  if (report.findings.length === 0) return out('doctor: nothing found');
  for (const finding of report.findings)
    out(`${finding.kind}: ${describeFinding(finding)}${finding.repairable ? '' : ' (needs a person)'}`);
  for (const repair of report.repairs)
    out(
      `${repair.repaired ? 'repaired' : 'left'}: ${describeFinding(repair.finding)}` +
        (repair.note ? ` — ${repair.note}` : ''),
    );
  out(
    `doctor: ${report.findings.length} finding(s)` +
      (args.repair ? `, ${report.remaining} remaining after repair` : '; --repair applies the safe fixes'),
  );
}

async function main(): Promise<number> {
  const args = parseDoctorArgs(process.argv.slice(2));
  if (typeof args === 'string') {
    process.stderr.write(`${args}\n`);
    return 2;
  }
  let config: DoctorConfig;
  try {
    const local = applyLocalEnv();
    if (local?.applied.length) process.stderr.write(`doctor: ${local.applied.join(', ')} from ${local.path}\n`);
    config = loadConfig(doctorConfigSchema);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n`);
    return 2;
  }
  const report = await runDoctor(config, args);
  print(report, args, (line) => process.stdout.write(`${line}\n`));
  return report.remaining > 0 ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (error) => {
      process.stderr.write(`doctor: the check failed: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(3);
    },
  );
}
