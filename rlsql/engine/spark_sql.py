"""Compile the catalogue's views and queries (DuckDB SQL) to Spark SQL with sqlglot.

sqlglot transpiles every file without a warning, yet most of them would then fail or answer
differently on Spark; each rewrite below closes one such gap (docs/spark.md lists them, with the
portability rules the SQL files keep so that no rewrite is needed for the rest):

- scalar macros (sql/macros, `CREATE MACRO ... AS expr`) are inlined in parentheses, as are their
  operator arguments, a row argument passed by table alias included (`routing.x` becomes `r.x`);
  table macros stay DuckDB-only;
- `getvariable('p')` (the `param()` helper) becomes the validated value as a typed literal, and a
  window frame bound that holds a parameter is folded to the plain integer Spark demands there;
- `quantile_cont(x, p)` becomes the exact `percentile(x, p)` (same linear interpolation; never
  percentile_approx);
- `list_reduce(l, lambda)` becomes `aggregate(tail, head, lambda)` (Spark needs a seed);
- `list(x ORDER BY k) FILTER (WHERE x IS NOT NULL) OVER (... ORDER BY k ...)` becomes
  `collect_list(x) OVER (...)` (Spark allows no FILTER in a window; collect_list skips NULLs and
  keeps the frame's order);
- `list_position` is NULL when absent (Spark's array_position says 0); `regexp_full_match` is an
  anchored RLIKE; `try_strptime` is try_to_timestamp with the Java pattern; `json_type(x) =
  'ARRAY'` is `json_array_length(x) IS NOT NULL`; `fsum` is sum; `arg_min/arg_max` skip NULL
  values as DuckDB's do;
- `CAST(double AS BIGINT)` rounds half to even first (DuckDB rounds, Spark truncates);
- `a / b` is `try_divide(a, b)`: Spark's ANSI mode raises on a zero divisor where a FILTER or a
  CASE would have kept DuckDB from ever using the value (files guard real zeros with nullif);
- decimal literals are DOUBLE (`1.0D`): Spark reads `1.0` as DECIMAL and rounds averages of it;
- DuckDB's `UNPIVOT ... ON COLUMNS(* EXCLUDE ...)` becomes Spark's UNPIVOT over the column list
  (asked of Spark itself, as the input's columns depend on the runs' CSV headers);
- QUALIFY stays QUALIFY (Spark 4.2+ has it; sqlglot's rewrite would leak a helper column).

sqlglot adds the explicit NULLS LAST that DuckDB's ordering implies. What compiles is checked by
Spark when the view is created (tests/test_spark.py); a construct no rewrite covers raises
SparkCompileError naming the file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import operator
import re
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import sqlglot
from sqlglot import exp, transforms
from sqlglot.dialects.spark import Spark
from sqlglot.generators.spark import SparkGenerator

from rlsql.catalog.catalog import Catalog
from rlsql.catalog.params import Param
from rlsql.catalog.sqlfile import SqlFile
from rlsql.core.errors import CatalogError

_MACRO = re.compile(
    r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?MACRO\s+(?P<name>\w+)\s*\((?P<params>[^)]*)\)\s+AS\s+(?P<table>TABLE\s+)?"
    r"(?P<body>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_STRPTIME = {"%Y": "yyyy", "%m": "MM", "%d": "dd", "%H": "HH", "%M": "mm", "%S": "ss"}
_SPARK_TYPES = {"INTEGER": "INT", "DOUBLE": "DOUBLE", "VARCHAR": "STRING", "BOOLEAN": "BOOLEAN", "BIGINT": "BIGINT"}
_INTEGER_TYPES = {exp.DataType.Type.BIGINT, exp.DataType.Type.INT, exp.DataType.Type.SMALLINT}


class SparkCompileError(CatalogError):
    """A construct of a SQL file that the Spark compiler has no rewrite for."""


class _Generator(SparkGenerator):
    TRANSFORMS: ClassVar[dict] = {
        **SparkGenerator.TRANSFORMS,
        # sqlglot's Spark generator rewrites QUALIFY into a subquery; Spark 4.2+ runs QUALIFY itself
        exp.Select: transforms.preprocess(
            [transforms.eliminate_distinct_on, transforms.unnest_to_explode, transforms.any_to_exists]
        ),
    }

    def literal_sql(self, expression: exp.Literal) -> str:
        text = super().literal_sql(expression)
        # `1.0` is a DECIMAL on Spark (averages of it round to a few places); DuckDB reads a DOUBLE... here
        if not expression.is_string and "." in text and "e" not in text.lower():
            return text + "D"
        return text


class RlsqlSpark(Spark):
    """Spark's dialect as rlsql generates it (native QUALIFY, DOUBLE literals)."""

    Generator = _Generator


# -- macros ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def scalar_macros(catalog: Catalog) -> dict[str, tuple[list[str], exp.Expr]]:
    """name -> (parameters, body) of every scalar macro; table macros are DuckDB-only. Parsed once per
    catalogue (every compile parsed them all again: a quarter of compiling the catalogue); the bodies are
    copied before use, never changed."""
    macros: dict[str, tuple[list[str], exp.Expr]] = {}
    for f in catalog.files.values():
        if f.kind != "macro":
            continue
        match = _MACRO.match(f.rendered)
        if match is None or match["table"]:
            continue
        params = [p.strip() for p in match["params"].split(",") if p.strip()]
        if any(":=" in p for p in params):
            raise SparkCompileError(f"{f.path}: a scalar macro with a default parameter cannot be inlined")
        macros[f.name] = (params, sqlglot.parse_one(match["body"], read="duckdb"))
    return macros


def _inline(tree: exp.Expr, macros: Mapping[str, tuple[list[str], exp.Expr]], path: str) -> exp.Expr:
    def expand(node: exp.Expr) -> exp.Expr:
        if not isinstance(node, exp.Anonymous) or node.name.lower() not in macros:
            return node
        params, body = macros[node.name.lower()]
        args = node.expressions
        if len(args) != len(params):
            raise SparkCompileError(f"{path}: {node.name} takes {len(params)} arguments, not {len(args)}")
        # an operator's argument and the body in parentheses, as DuckDB binds a macro: `a - m(x - y)` with
        # m(n) = n * 2 is a - ((x - y) * 2), not a - x - y * 2 (a function's or a window's needs none, and the
        # rewrites that read its type, such as len() of a list, would not see through them)
        bound = {
            p: exp.Paren(this=a) if isinstance(a, exp.Binary | exp.Unary) else a
            for p, a in zip(params, args, strict=True)
        }

        def substitute(inner: exp.Expr) -> exp.Expr:
            if isinstance(inner, exp.Column):
                if not inner.table and inner.name in bound:
                    return bound[inner.name].copy()
                if inner.table in bound:
                    # a row passed by table alias: `routing.x` reads column x of that alias
                    arg = bound[inner.table]
                    if not isinstance(arg, exp.Column) or arg.table:
                        raise SparkCompileError(f"{path}: {node.name}'s row argument must be a table alias")
                    return exp.column(inner.name, table=arg.name)
            return inner

        return exp.Paren(this=_inline(body.copy().transform(substitute, copy=False), macros, path))

    # in place: `tree` is the compiler's own (parsed for this compile, or a macro body copied above)
    return tree.transform(expand, copy=False)


# -- parameters -----------------------------------------------------------------------------------
def _typed_literal(param: Param, value: Any) -> exp.Expr:
    from rlsql.core.sqltext import literal

    spark_type = _SPARK_TYPES[param.type]
    if value is None:
        return exp.cast(exp.null(), spark_type, dialect="spark")
    # `value` was validated by bind_params; literal() quotes it (a string never ends its literal)
    return exp.cast(sqlglot.parse_one(literal(value), read="duckdb"), spark_type, dialect="spark")


def _fold_integer(node: exp.Expr, path: str) -> int:
    """The value of a window frame bound built from literals (Spark accepts only a literal there)."""
    return int(_fold(node, path, node))


def _fold(node: exp.Expr, path: str, bound: exp.Expr) -> float:
    """A frame bound's arithmetic: + - * /, abs, ln, ceil, a CASE over = and < (ema_depth(span)), casts
    (an INTEGER or BIGINT cast truncates), COALESCE of a parameter with its default."""

    def fold(n: exp.Expr) -> float:
        return _fold(n, path, bound)

    if isinstance(node, exp.Paren):
        return fold(node.this)
    if isinstance(node, exp.Literal) and not node.is_string:
        return float(node.this)
    if isinstance(node, exp.Cast | exp.TryCast):
        value = fold(node.this)
        return float(math.trunc(value)) if node.to.is_type(*exp.DataType.INTEGER_TYPES) else value
    if isinstance(node, exp.Coalesce):
        for candidate in [node.this, *node.expressions]:
            if not isinstance(candidate, exp.Null) and not (
                isinstance(candidate, exp.Cast) and isinstance(candidate.this, exp.Null)
            ):
                return fold(candidate)
        raise SparkCompileError(f"{path}: a window frame bound is NULL")
    binary: dict[type, Callable[[float, float], float]] = {
        exp.Add: operator.add,
        exp.Sub: operator.sub,
        exp.Mul: operator.mul,
        exp.Div: operator.truediv,
        exp.EQ: lambda a, b: float(a == b),
        exp.LT: lambda a, b: float(a < b),
    }
    for kind, op in binary.items():
        if isinstance(node, kind):
            return op(fold(node.this), fold(node.expression))
    unary: dict[type, Callable[[float], float]] = {
        exp.Neg: operator.neg,
        exp.Abs: abs,
        exp.Ln: math.log,
        exp.Ceil: lambda v: float(math.ceil(v)),
    }
    for kind, op1 in unary.items():
        if isinstance(node, kind):
            return op1(fold(node.this))
    if isinstance(node, exp.Case):
        for branch in node.args.get("ifs") or []:
            if fold(branch.this):
                return fold(branch.args["true"])
        default = node.args.get("default")
        if default is not None:
            return fold(default)
    raise SparkCompileError(f"{path}: a window frame bound must be built from literals and parameters: {bound.sql()}")


def _bind(tree: exp.Expr, f: SqlFile, values: Mapping[str, Any]) -> exp.Expr:
    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous) and node.name.lower() == "getvariable":
            arg = node.expressions[0] if node.expressions else None
            if not isinstance(arg, exp.Literal) or not arg.is_string:
                raise SparkCompileError(f"{f.path}: getvariable() takes a parameter name as a string literal")
            param = f.param(arg.this)
            return _typed_literal(param, values.get(param.name))
        return node

    tree = tree.transform(replace)
    for spec in list(tree.find_all(exp.WindowSpec)):
        for side in ("start", "end"):
            bound = spec.args.get(side)
            if isinstance(bound, exp.Expression) and not isinstance(bound, exp.Literal):
                value = _fold_integer(bound, f.path)
                if value < 0:
                    raise SparkCompileError(f"{f.path}: a window frame bound folds to {value}, below 0")
                spec.set(side, exp.Literal.number(value))
    return tree


# -- function and operator rewrites ---------------------------------------------------------------
def _func(name: str, *args: exp.Expr) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _not_null(node: exp.Expr) -> exp.Expr:
    return exp.Not(this=exp.Is(this=node.copy(), expression=exp.Null()))


def _stringish(node: exp.Expr) -> bool:
    """Whether an expression is text by its form (casts of text to integers must not be rounded)."""
    if isinstance(node, exp.Literal):
        return node.is_string
    if isinstance(node, exp.RegexpExtract | exp.Concat | exp.DPipe | exp.Substring | exp.Trim | exp.Lower | exp.Upper):
        return True
    return isinstance(node, exp.Cast) and node.to.is_type(*exp.DataType.TEXT_TYPES)


def _rewrite(node: exp.Expr, path: str) -> exp.Expr:
    if isinstance(node, exp.PercentileCont):
        quantile = node.expression
        if isinstance(quantile, exp.Array):
            quantile = exp.Array(expressions=[q.copy() for q in quantile.expressions])
        return _func("percentile", node.this, quantile)
    if isinstance(node, exp.PercentileDisc | exp.ApproxQuantile):
        raise SparkCompileError(f"{path}: only quantile_cont compiles to Spark (exact percentile)")
    if isinstance(node, exp.RegexpFullMatch):
        pattern = node.expression
        if not isinstance(pattern, exp.Literal) or not pattern.is_string:
            raise SparkCompileError(f"{path}: regexp_full_match needs a literal pattern")
        return exp.RegexpLike(this=node.this, expression=exp.Literal.string(f"^(?:{pattern.this})$"))
    if isinstance(node, exp.EQ) and isinstance(node.this, exp.JSONType):
        kind = node.expression
        if not isinstance(kind, exp.Literal) or kind.this.upper() != "ARRAY":
            raise SparkCompileError(f"{path}: json_type compiles to Spark only as json_type(x) = 'ARRAY'")
        return _not_null(_func("json_array_length", node.this.this))
    if isinstance(node, exp.JSONType):
        raise SparkCompileError(f"{path}: json_type compiles to Spark only as json_type(x) = 'ARRAY'")
    if isinstance(node, exp.ArgMin | exp.ArgMax):
        return _skip_null_arg(node)
    if isinstance(node, exp.Filter) and isinstance(node.this, exp.ArgMin | exp.ArgMax):
        where = exp.and_(node.expression.this.copy(), _not_null(node.this.this))
        return exp.Filter(this=node.this.copy(), expression=exp.Where(this=where))
    if isinstance(node, exp.Length) and _is_list(node.this):
        return _func("size", node.this)
    if isinstance(node, exp.Div):
        return _func("try_divide", node.this, node.expression)
    if isinstance(node, exp.Cast) and node.to.this in _INTEGER_TYPES and not _stringish(node.this):
        # DuckDB rounds a DOUBLE to the nearest integer (ties to even); Spark would truncate
        return exp.Cast(this=_func("bround", node.this), to=node.to.copy())
    if isinstance(node, exp.Window) and isinstance(node.this, exp.Filter):
        return _windowed_list(node, path)
    if isinstance(node, exp.First) and isinstance(node.this, exp.Order):
        raise SparkCompileError(f"{path}: first(x ORDER BY ...) has no Spark form; rank with row_number() instead")
    if isinstance(node, exp.ToMap) and isinstance(node.this, exp.Struct) and not node.this.expressions:
        return _func("map")  # DuckDB's `MAP {}`
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        args = node.expressions
        if name == "timezone":
            return _utc_wall_clock(args, path)
        if name == "list_position":
            return exp.Nullif(this=_func("array_position", *args), expression=exp.Literal.number(0))
        if name == "fsum":
            return exp.Sum(this=args[0])
        if name == "try_strptime":
            return _try_strptime(args, path)
        if name == "list_reduce":
            return _list_reduce(args, path)
    return node


def _rewrite_all(tree: exp.Expr, path: str) -> exp.Expr:
    """_rewrite over the whole tree, inside each replacement too (sqlglot's transform skips those)."""

    def visit(node: exp.Expr) -> exp.Expr:
        new = node if isinstance(node, exp.Pivot) else _rewrite(node, path)
        if new is not node:
            for child in list(new.iter_expressions()):
                child.replace(_rewrite_all(child, path))
        return new

    return tree.transform(visit, copy=False)


def _is_list(node: exp.Expr) -> bool:
    """Whether an expression is a list by its form (`len(list)` is Spark's size, not length)."""
    if isinstance(node, exp.Window):
        node = node.this.this if isinstance(node.this, exp.Filter) else node.this
    return isinstance(node, exp.Array | exp.ArrayAgg | exp.ArrayAppend | exp.ArraySort)


def _skip_null_arg(node: exp.ArgMin | exp.ArgMax) -> exp.Expr:
    # DuckDB's arg_min/arg_max look only at rows whose value is not NULL; Spark's min_by/max_by do not
    if isinstance(node.parent, exp.Filter):
        return node
    return exp.Filter(this=node.copy(), expression=exp.Where(this=_not_null(node.this)))


def _utc_wall_clock(args: list[exp.Expr], path: str) -> exp.Expr:
    """timezone('UTC', <TIMESTAMPTZ>): the instant as UTC wall-clock time (TIMESTAMP_NTZ; the session is UTC)."""
    zone = args[0] if args else None
    if len(args) != 2 or not isinstance(zone, exp.Literal) or zone.this.upper() != "UTC":
        raise SparkCompileError(f"{path}: timezone() compiles to Spark only as timezone('UTC', <timestamptz>)")
    value = args[1]
    if isinstance(value, exp.TryCast | exp.Cast) and value.to.is_type(exp.DataType.Type.TIMESTAMPTZ):
        value = exp.TryCast(this=value.this, to=exp.DataType.build("TIMESTAMP_LTZ", dialect="spark"))
    return exp.Cast(this=value, to=exp.DataType.build("TIMESTAMP_NTZ", dialect="spark"))


def _try_strptime(args: list[exp.Expr], path: str) -> exp.Expr:
    fmt = args[1] if len(args) == 2 else None
    if not isinstance(fmt, exp.Literal) or not fmt.is_string:
        raise SparkCompileError(f"{path}: try_strptime needs a literal format")
    java = fmt.this
    for code, pattern in _STRPTIME.items():
        java = java.replace(code, pattern)
    if "%" in java:
        raise SparkCompileError(f"{path}: try_strptime format {fmt.this!r} uses a code the compiler does not map")
    return _func("try_to_timestamp", args[0], exp.Literal.string(java))


def _list_reduce(args: list[exp.Expr], path: str) -> exp.Expr:
    if len(args) != 2 or not isinstance(args[1], exp.Lambda):
        raise SparkCompileError(f"{path}: list_reduce takes a list and a lambda (no initial value)")
    values = args[0]
    head = _func("try_element_at", values.copy(), exp.Literal.number(1))
    tail = _func("slice", values.copy(), exp.Literal.number(2), _func("size", values.copy()))
    return _func("aggregate", tail, head, args[1])


def _windowed_list(window: exp.Window, path: str) -> exp.Expr:
    """list(x ORDER BY k) FILTER (WHERE x IS NOT NULL) OVER (... ORDER BY k ...) -> collect_list(x) OVER (...)."""
    filtered = window.this
    agg = filtered.this
    if not isinstance(agg, exp.ArrayAgg):
        raise SparkCompileError(f"{path}: Spark has no FILTER in a window function")
    inner = agg.this
    value = inner.this if isinstance(inner, exp.Order) else inner
    condition = filtered.expression.this
    if condition != _not_null(value):
        raise SparkCompileError(f"{path}: a windowed list compiles only with FILTER (WHERE <value> IS NOT NULL)")
    window_order = window.args.get("order")
    if isinstance(inner, exp.Order) and (
        window_order is None or [o.sql() for o in inner.expressions] != [o.sql() for o in window_order.expressions]
    ):
        raise SparkCompileError(f"{path}: a windowed list must be ordered as its window")
    result = window.copy()
    result.set("this", _func("collect_list", value.copy()))
    return result


# -- UNPIVOT --------------------------------------------------------------------------------------
def _unpivot(tree: exp.Expr, columns_of: Callable[[str], list[str]] | None, path: str) -> exp.Expr:
    """DuckDB's `UNPIVOT (q) ON COLUMNS(* EXCLUDE (k...)) INTO NAME n VALUE v` as Spark's UNPIVOT clause."""
    if not isinstance(tree, exp.Pivot) or not tree.args.get("unpivot") or not tree.args.get("into"):
        return tree
    on = tree.expressions
    if len(on) != 1 or not isinstance(on[0], exp.Columns) or not isinstance(on[0].this, exp.Star):
        raise SparkCompileError(f"{path}: only UNPIVOT ... ON COLUMNS(* EXCLUDE (...)) compiles to Spark")
    kept = [c.name for c in on[0].this.args.get("except_") or []]
    into = tree.args["into"]
    name_col, value_col = into.this.name, into.expressions[0].name
    source = tree.this.this if isinstance(tree.this, exp.Subquery) else tree.this
    source_sql = source.sql(dialect=RlsqlSpark)
    if columns_of is None:
        raise SparkCompileError(f"{path}: this UNPIVOT's columns come from the data: compiling it needs a session")
    unpivoted = [c for c in columns_of(source_sql) if c not in kept]
    quoted = ", ".join(exp.to_identifier(c, quoted=True).sql(dialect=RlsqlSpark) for c in unpivoted)
    keep = ", ".join(exp.to_identifier(c, quoted=True).sql(dialect=RlsqlSpark) for c in kept)
    if not unpivoted:
        # no metric column at all: the same columns, no rows
        return sqlglot.parse_one(
            f"SELECT {keep}, CAST(NULL AS STRING) AS `{name_col}`, CAST(NULL AS DOUBLE) AS `{value_col}` "
            f"FROM ({source_sql}) AS u WHERE false",
            read="spark",
        )
    return sqlglot.parse_one(
        f"SELECT {keep}, `{name_col}`, `{value_col}` FROM ({source_sql}) AS u "
        f"UNPIVOT (`{value_col}` FOR `{name_col}` IN ({quoted}))",
        read="spark",
    )


# -- the compiler ---------------------------------------------------------------------------------
def compile_tree(
    f: SqlFile,
    catalog: Catalog,
    values: Mapping[str, Any],
    columns_of: Callable[[str], list[str]] | None = None,
) -> list[tuple[str, str]]:
    """(view name, Spark SQL) pairs: helper views first, then the file's own object."""
    if f.kind not in ("view", "query"):
        raise SparkCompileError(f"{f.path}: only views and queries compile to Spark ({f.name} is a {f.kind})")
    try:
        tree = sqlglot.parse_one(f.rendered, read="duckdb")
    except sqlglot.errors.SqlglotError as exc:
        raise SparkCompileError(f"{f.path}: sqlglot cannot parse it: {exc}") from exc
    tree = _inline(tree, scalar_macros(catalog), f.path)
    tree = _bind(tree, f, values)
    tree = _rewrite_all(tree, f.path)
    tree = _star_replace(tree, columns_of, f.path)
    tree = _unpivot(tree, columns_of, f.path)
    helpers, tree = _hoist_ctes(tree, f.name)
    return [*helpers, (f.name, tree.sql(dialect=RlsqlSpark, pretty=True))]


def _star_replace(tree: exp.Expr, columns_of: Callable[[str], list[str]] | None, path: str) -> exp.Expr:
    """`* EXCLUDE (...) REPLACE (expr AS c)` as the explicit column list (Spark has no REPLACE)."""
    for star in list(tree.find_all(exp.Star)):
        replaced = star.args.get("replace")
        select = star.parent
        if not replaced or not isinstance(select, exp.Select):
            continue
        if columns_of is None:
            raise SparkCompileError(f"{path}: a `* REPLACE (...)` needs a Spark session to list its columns")
        probe = select.copy()
        bare = star.copy()
        bare.set("replace", None)
        probe.set("expressions", [bare])
        for key in ("where", "group", "having", "qualify", "order", "limit"):
            probe.set(key, None)
        by_name = {r.alias_or_name: r for r in replaced}
        expanded = [
            by_name[c].copy() if c in by_name else exp.column(c, quoted=True)
            for c in columns_of(probe.sql(dialect=RlsqlSpark))
        ]
        index = select.expressions.index(star)
        select.set("expressions", select.expressions[:index] + expanded + select.expressions[index + 1 :])
    return tree


def _hoist_ctes(tree: exp.Expr, name: str) -> tuple[list[tuple[str, str]], exp.Expr]:
    """Some of the top-level CTEs as helper views `NAME__CTE`, created (and checkpointed) before the object.

    Spark inlines a CTE at each of its references and computes it again there. The CTEs a recursive CTE
    reads would be computed again at every step of the recursion (timing_breakdown: ~40 s on a small run,
    local mode): every plain one is hoisted. Elsewhere a CTE read more than once is hoisted (with the CTEs
    it reads), so it is computed once: `findings` ran ~200 Spark stages per run set, its shared steps
    computed again for every rule reading them.
    """
    with_ = tree.args.get("with_")
    if not isinstance(with_, exp.With):
        return [], tree
    ctes = {cte.alias: cte for cte in with_.expressions}
    nested = [w for w in tree.find_all(exp.With) if w is not with_]
    if any(cte.alias in ctes for w in nested for cte in w.expressions):
        return [], tree  # a name shadowed inside: renaming by name would be wrong, and no query does it

    def reads(node: exp.Expr) -> list[str]:
        return [t.name for t in node.find_all(exp.Table) if t.name in ctes and not t.args.get("db")]

    if with_.args.get("recursive"):
        wanted = set(ctes)
    else:
        counts = Counter(reads(tree))  # the query's references and the CTEs' own
        wanted = {alias for alias, n in counts.items() if n > 1}
        for alias in reversed(list(ctes)):  # a CTE a wanted one reads is wanted too (a view sees no CTE)
            if alias in wanted:
                wanted.update(reads(ctes[alias].this))
    # in order (a CTE reads earlier ones): hoisted only if it is a plain query (not recursive, no column list)
    # reading hoisted CTEs alone; the others stay in the WITH, read where they were
    chosen: set[str] = set()
    for alias, cte in ctes.items():
        if alias in wanted and not cte.args["alias"].args.get("columns") and set(reads(cte.this)) <= chosen:
            chosen.add(alias)
    if not chosen:
        return [], tree
    hoisted: dict[str, str] = {}

    def rename(node: exp.Expr) -> exp.Expr:
        for table in list(node.find_all(exp.Table)):
            if table.name in hoisted and not table.args.get("db"):
                alias = table.alias or table.name
                table.set("this", exp.to_identifier(hoisted[table.name]))
                table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
        return node

    helpers: list[tuple[str, str]] = []
    kept = []
    for cte in with_.expressions:
        if cte.alias not in chosen:
            kept.append(cte)
            continue
        body = rename(cte.this)  # the CTE leaves the tree: its body is this function's to change
        helper = f"{name}__{cte.alias}"
        helpers.append((helper, body.sql(dialect=RlsqlSpark, pretty=True)))
        hoisted[cte.alias] = helper
    for cte in kept:
        rename(cte.this)
    with_.set("expressions", kept)
    tree.set("with_", None)
    rename(tree)  # the query's own references (the kept CTEs' are renamed above)
    tree.set("with_", with_ if kept else None)
    return helpers, tree


def compiled_key(f: SqlFile, values: Mapping[str, Any], inputs: str) -> str:
    """What a file's Spark SQL depends on: its fingerprint (its SQL and every parent's), its parameter values
    and, where it lists them (_reads_columns), its inputs' columns."""
    own = {p.name: values.get(p.name) for p in f.params}
    raw = json.dumps([f.fingerprint, own, inputs], default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


def compile_file(
    f: SqlFile,
    catalog: Catalog,
    values: Mapping[str, Any] | None = None,
    columns_of: Callable[[str], list[str]] | None = None,
    inputs: str = "",
    cache: dict[str, list[tuple[str, str]]] | None = None,
) -> list[tuple[str, str]]:
    """Spark SQL for one view or query, parameters as validated typed literals: (view name, SQL) pairs,
    the helper views of its hoisted CTEs first (_hoist_ctes), the file's own object last.

    `columns_of(sql)` names the columns of a Spark query (a DuckDB UNPIVOT and a `* REPLACE (...)` need
    it); `inputs` identifies the sources' columns for the key of `cache` (a SparkCatalog's compiled
    statements: those two's output lists them).
    """
    values = values or {}
    key = compiled_key(f, values, inputs if f.name and _reads_columns(f) else "")
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return hit
    statements = compile_tree(f, catalog, values, columns_of)
    if cache is not None:
        cache[key] = statements
    return statements


def _reads_columns(f: SqlFile) -> bool:
    """Whether `f` compiles to SQL that lists its input's columns: an UNPIVOT, or a `* ... REPLACE (` that
    becomes an explicit column list (metric_rows: one run set's metric columns are not another's)."""
    return bool(re.search(r"\bUNPIVOT\b|\*[^;]*?\bREPLACE\s*\(", f.rendered, re.IGNORECASE))
