-- execute_code's circuit breakers in one round trip (docs/execute-code.md "Quotas"): both
-- counters are taken, or neither. Each increment only succeeds while `count < cap` (the
-- row lock queues concurrent callers, who then see the committed count); when the second
-- cap is reached, the block's savepoint undoes the first increment. Returns NULL when
-- both were taken, else the dimension that refused.
CREATE FUNCTION "execute_code_take"(
  first_dimension TEXT, first_subject TEXT, first_window TIMESTAMPTZ(3), first_cap INTEGER,
  second_dimension TEXT, second_subject TEXT, second_window TIMESTAMPTZ(3), second_cap INTEGER
) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
  refused TEXT;
BEGIN
  BEGIN
    refused := first_dimension;
    INSERT INTO "execute_code_counters" ("dimension", "subject", "window_start", "count")
    SELECT first_dimension, first_subject, first_window, 1 WHERE first_cap > 0
    ON CONFLICT ("dimension", "subject", "window_start")
    DO UPDATE SET "count" = "execute_code_counters"."count" + 1
    WHERE "execute_code_counters"."count" < first_cap;
    IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SX001'; END IF;
    refused := second_dimension;
    INSERT INTO "execute_code_counters" ("dimension", "subject", "window_start", "count")
    SELECT second_dimension, second_subject, second_window, 1 WHERE second_cap > 0
    ON CONFLICT ("dimension", "subject", "window_start")
    DO UPDATE SET "count" = "execute_code_counters"."count" + 1
    WHERE "execute_code_counters"."count" < second_cap;
    IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = 'SX001'; END IF;
    RETURN NULL;
  EXCEPTION WHEN SQLSTATE 'SX001' THEN
    RETURN refused;
  END;
END
$$;
