-- name: shell_word
-- version: 1
-- description: shell_word(text): the text as one word of a POSIX shell command line: as it is when it holds only
--   letters, digits and `._,:=@%+/-`, else in single quotes (a quote inside written '"'"'), so that a command built
--   from a run's name can be pasted.
CREATE OR REPLACE MACRO shell_word(word) AS
    CASE
        WHEN regexp_full_match(word, '[A-Za-z0-9._,:=@%+/-]+') THEN word
        ELSE '''' || replace(word, '''', '''"''"''') || ''''
    END
