-- The broker instance running an unfinished Idempotency-Key claim (docs/sessions.md,
-- "Idempotency-Key"): a duplicate that finds its holder dead (its presence expired, as
-- after a kill -9) takes the claim over at once instead of waiting out the claim's 2 minutes.
ALTER TABLE "idempotency_records" ADD COLUMN "holder_id" TEXT;
