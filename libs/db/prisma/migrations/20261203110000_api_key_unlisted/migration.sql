-- A bootstrap key revoked because UHP_API_KEYS no longer lists it comes back when it is listed again;
-- one revoked with the CLI stays revoked.
ALTER TABLE "api_keys" ADD COLUMN "unlisted" BOOLEAN NOT NULL DEFAULT false;
