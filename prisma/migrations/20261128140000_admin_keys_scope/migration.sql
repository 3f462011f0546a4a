-- The operator scope admin:keys (docs/admin.md, "API keys"): a key for another tenant or
-- principal now needs it. The broker's own first admin keys (BROKER_BOOTSTRAP_API_KEY, the key
-- generated at first start, and their rotations, which keep identity and name) hold every caller
-- scope, so keys stored before the scope existed get it too. No other key does: an admin:sandbox
-- key an operator made keeps issuing keys only to itself until the operator grants admin:keys.
UPDATE "api_keys"
SET "scopes" = array_append("scopes", 'admin:keys')
WHERE "tenant_id" = 'default'
  AND "principal_id" = 'admin'
  AND "principal_type" = 'service'
  AND "name" IN ('bootstrap admin', 'generated admin')
  AND 'admin:sandbox' = ANY ("scopes")
  AND NOT ('admin:keys' = ANY ("scopes"));
