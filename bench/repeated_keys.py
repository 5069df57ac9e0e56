"""What finding a key written twice in a trajectory would cost every query: DuckDB's parse of the files into the
trajectory sources' structure against the json_keys passes `rlsql check` makes (sql/sources/_repeated_keys.sql.j2).

Usage (from the repository root; the files under /tmp, never in the repository)::

    python bench/trajectories.py generate --trials 2000 /tmp/trajbench/t2k
    python bench/repeated_keys.py /tmp/trajbench/t2k --repeats 3

The files are read into memory once (read_blob), then each statement runs on one thread, alternated, and the
median of each is printed: the parse the sources make (from_json into the steps source's structure) and json_keys
over the steps and over the steps and their tool calls, and the byte-level pre-filter tried instead (the
`"step_id"`, `"message"` and `"function_name"` tokens of each file counted with one regular expression).
"""

from __future__ import annotations

import argparse
import glob
import statistics
import time

import duckdb

#: the structure trajectory_steps_src declares (sql/sources/_trajectory_files.sql.j2 with its step fields)
STRUCTURE = (
    '{"agent": {"model_name": "JSON"}, "steps": [{"step_id": "JSON", "source": "JSON", '
    '"is_copied_context": "JSON", "timestamp": "JSON", "model_name": "JSON", "message": "JSON", '
    '"reasoning_content": "JSON", "tool_calls": [{"function_name": "JSON"}], "metrics": {"prompt_tokens": '
    '"JSON", "completion_tokens": "JSON", "cached_tokens": "JSON", "cost_usd": "JSON"}}]}'
)
STATEMENTS = {
    "from_json (the sources' parse)": f"SELECT count(try(from_json(text, '{STRUCTURE}'))) FROM f",
    # the pre-filter tried for issue 42 item 4 (commit "Read a repeated step_id, message or function_name last"):
    # a file with more of these tokens than steps (calls) may repeat a key, and only it would be parsed again
    "the tokens counted (the pre-filter)": "SELECT sum(len(regexp_extract_all(text, "
    "'\"(step_id|message|function_name)\"', 1))) FROM f",
    "json_keys of the steps": "SELECT sum(len(json_keys(text, '$.steps[*]'))) FROM f",
    "json_keys of the steps and tool calls": "SELECT sum(len(json_keys(text, '$.steps[*]'))) "
    "+ sum(len(json_keys(text, '$.steps[*].tool_calls[*]'))) FROM f",
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    files = sorted(glob.glob(f"{args.run}/trace_jobs/*/agent/trajectory*.json"))
    con = duckdb.connect(config={"threads": 1})
    con.execute("CREATE TABLE f AS SELECT decode(content) AS text FROM read_blob(?)", [files])
    seconds: dict[str, list[float]] = {name: [] for name in STATEMENTS}
    for _ in range(args.repeats):
        for name, sql in STATEMENTS.items():
            started = time.perf_counter()
            con.execute(sql).fetchall()
            seconds[name].append(time.perf_counter() - started)
    print(f"{len(files):,} files, one thread, median of {args.repeats}")
    for name, times in seconds.items():
        print(f"| {name} | {statistics.median(times):.2f} s | {min(times):.2f}-{max(times):.2f} s |")


if __name__ == "__main__":
    main()
