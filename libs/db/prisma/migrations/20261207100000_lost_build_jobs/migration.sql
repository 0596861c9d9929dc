-- The worker's sweep gives a preview or archive still waiting its job again when Redis lost it (a failover to a
-- replica that had not received it, a restart without persistence). Partial indexes, so that it reads only the few
-- rows still waiting, never the many finished ones. Prisma's schema cannot express them: they live here only.
CREATE INDEX "previews_pending_updated_at_idx" ON "previews"("updated_at") WHERE "status" = 'PENDING';
CREATE INDEX "archives_unbuilt_updated_at_idx" ON "archives"("updated_at") WHERE "status" IN ('pending', 'building');
