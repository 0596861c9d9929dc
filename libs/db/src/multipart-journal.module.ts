import { Module } from '@nestjs/common';
import { DatabaseHealth } from './database';
import { PrismaLifecycle, prismaProvider, repository } from './prisma.providers';
import { S3MultipartRepository } from './repositories/s3-multipart.repository';

/**
 * The storage service's part of Postgres: the journal of the S3 multipart uploads it opens
 * (S3MultipartRepository) and the database's readiness. No other repository: storage holds no metadata but
 * the journal.
 */
@Module({
  providers: [prismaProvider, PrismaLifecycle, DatabaseHealth, repository(S3MultipartRepository)],
  exports: [DatabaseHealth, S3MultipartRepository],
})
export class MultipartJournalModule {}
