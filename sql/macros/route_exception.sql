-- name: route_exception
-- version: 1
-- description: route_exception(exception, passthrough, mask, zero, default_treatment): the treatment the trainer gives a trial that ended with `exception` (NULL: none). Exact names; checked in the trainer's order passthrough, mask, zero, then the default.
CREATE OR REPLACE MACRO route_exception(exception, passthrough, mask, zero, default_treatment) AS
    CASE
        WHEN exception IS NULL THEN 'none'
        WHEN list_contains(passthrough, exception) THEN 'passthrough'
        WHEN list_contains(mask, exception) THEN 'mask'
        WHEN list_contains(zero, exception) THEN 'zero'
        ELSE default_treatment
    END
