-- Keys made from UHP_API_KEYS are the environment's to keep or drop: one no longer listed is revoked at
-- the next start. Keys made with the CLI are never touched by that.
CREATE TYPE "api_key_source" AS ENUM ('cli', 'bootstrap');
ALTER TABLE "api_keys" ADD COLUMN "source" "api_key_source" NOT NULL DEFAULT 'cli';
UPDATE "api_keys" SET "source" = 'bootstrap' WHERE "label" = 'UHP_API_KEYS';

-- The visible prefix shows at most 8 characters and never more than a quarter of the key. Earlier
-- prefixes were min(12, length - 4) characters: a shorter one tells the key's length, a 12-character
-- one only that the key has 16 or more, so it keeps 4.
UPDATE "api_keys"
   SET "key_prefix" = left("key_prefix", CASE WHEN length("key_prefix") >= 12 THEN 4 ELSE LEAST(8, (length("key_prefix") + 4) / 4) END);
