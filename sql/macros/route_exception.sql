-- name: route_exception
-- version: 1
-- description: route_exception(exception_type, routing): the treatment the trainer gives a trial that ended with `exception_type` (`No exception`: none), where `routing` is the run's exception_routing row. Exact names, checked in the trainer's order passthrough, mask, zero, then the default.
CREATE OR REPLACE MACRO route_exception(exception_type, routing) AS
    CASE
        WHEN exception_type = 'No exception' THEN 'none'
        WHEN list_contains(routing.passthrough_exceptions, exception_type) THEN 'passthrough'
        WHEN list_contains(routing.mask_exceptions, exception_type) THEN 'mask'
        WHEN list_contains(routing.zero_exceptions, exception_type) THEN 'zero'
        ELSE routing.default_error_treatment
    END
