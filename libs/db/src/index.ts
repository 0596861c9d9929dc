export * from './prisma.service';
export * from './repositories/paging';
export * from './repositories/stored-object.repository';
export * from './repositories/principal.repository';
export * from './repositories/file.repository';
export * from './repositories/session.repository';
export * from './repositories/container-file.repository';
export * from './db.module';
export type { FilePurpose, ContainerFileSource } from './generated/client';
