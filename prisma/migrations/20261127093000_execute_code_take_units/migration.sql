-- execute_code_take for several units at once (docs/execute-code.md "Quotas": units taken
-- ahead for an agent's next calls), and their return. Both counters are taken, or neither:
-- each increment succeeds only while `count + units <= cap`; when the second refuses, the
-- first is decremented again within the same transaction (its row lock is still held), so
-- no savepoint is needed. Returns NULL when both were taken, else the dimension that refused.
CREATE FUNCTION "execute_code_take_units"(
  first_dimension TEXT, first_subject TEXT, first_window TIMESTAMPTZ(3), first_cap INTEGER,
  second_dimension TEXT, second_subject TEXT, second_window TIMESTAMPTZ(3), second_cap INTEGER,
  units INTEGER
) RETURNS TEXT LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "execute_code_counters" ("dimension", "subject", "window_start", "count")
  SELECT first_dimension, first_subject, first_window, units WHERE units > 0 AND units <= first_cap
  ON CONFLICT ("dimension", "subject", "window_start")
  DO UPDATE SET "count" = "execute_code_counters"."count" + units
  WHERE "execute_code_counters"."count" + units <= first_cap;
  IF NOT FOUND THEN RETURN first_dimension; END IF;
  INSERT INTO "execute_code_counters" ("dimension", "subject", "window_start", "count")
  SELECT second_dimension, second_subject, second_window, units WHERE units > 0 AND units <= second_cap
  ON CONFLICT ("dimension", "subject", "window_start")
  DO UPDATE SET "count" = "execute_code_counters"."count" + units
  WHERE "execute_code_counters"."count" + units <= second_cap;
  IF NOT FOUND THEN
    UPDATE "execute_code_counters" SET "count" = "count" - units
    WHERE "dimension" = first_dimension AND "subject" = first_subject AND "window_start" = first_window;
    RETURN second_dimension;
  END IF;
  RETURN NULL;
END
$$;
