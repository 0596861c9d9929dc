import { doctorConfigSchema, loadConfig, type DoctorConfig } from '@app/common';
import { S3 } from './env';

/** The doctor's configuration for a test's database and bucket on the local S3 server, with no grace period. */
export function doctorConfigFor(databaseUrl: string, bucket: string, extra: Record<string, string> = {}): DoctorConfig {
  return loadConfig(doctorConfigSchema, {
    DATABASE_URL: databaseUrl,
    S3_ENDPOINT: S3.endpoint,
    S3_REGION: S3.region,
    S3_BUCKET: bucket,
    S3_ACCESS_KEY_ID: S3.accessKeyId,
    S3_SECRET_ACCESS_KEY: S3.secretAccessKey,
    DOCTOR_GRACE_SECONDS: '0',
    ...extra,
  });
}
