import { Module } from '@nestjs/common';
import { DatabaseHealth } from './database';
import { PrismaLifecycle, prismaProvider, repository } from './prisma.providers';
import { S3MultipartRepository } from './repositories/s3-multipart.repository';

/**
 * The storage service's part of Postgres: the journal of the S3 multipart uploads it opens
 * (S3MultipartRepository) and the database's readiness. No object stager, no job bus: storage is below them,
 * and imports this file by its path (not the '@app/db' barrel) so that it never loads the queue client.
 */
@Module({
  providers: [prismaProvider, PrismaLifecycle, DatabaseHealth, repository(S3MultipartRepository)],
  exports: [DatabaseHealth, S3MultipartRepository],
})
export class MultipartJournalModule {}
