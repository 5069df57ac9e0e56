# The versioned SQL of rlsql; installed as the package `rlsql.sql` so the files travel inside the wheel.
