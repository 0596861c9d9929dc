import { ensureBucket } from './s3';

export default async function setup() {
  await ensureBucket();
}
