"""Policy latency and episode wall time per system, from a corpus.

Kept apart from the benchmark metrics: latency is a cost of the system on this machine,
not a rate over registered instances.

* **latency per decision** — the wall time of each policy query, from the observation's
  delivery to the returned chunk (``observations.wall``, one receipt per query; physics
  is paused meanwhile);
* **wall time per episode** — the recorder's wall time from episode start to end
  (``final_scores.episodes[*].policy.episode_wall_s``), which includes simulation and
  rendering on the recording machine.

Runs without these fields (other recorders) simply do not contribute.
"""
from __future__ import annotations

from typing import Any

LATENCY_SQL = """
SELECT r.system_name AS system, count(*) AS decisions, avg(o.wall) AS mean_s,
       quantile_cont(o.wall, 0.5) AS p50_s, quantile_cont(o.wall, 0.95) AS p95_s, max(o.wall) AS max_s
FROM observations o JOIN runs r USING (run_id)
WHERE o.wall IS NOT NULL
GROUP BY r.system_name ORDER BY r.system_name
"""

EPISODE_WALL_SQL = """
SELECT r.system_name AS system, count(*) AS episodes, avg(w) AS mean_s, max(w) AS max_s
FROM (SELECT f.run_id, CAST(json_extract(e.value, '$.policy.episode_wall_s') AS DOUBLE) AS w
      FROM final_scores f, json_each(f.episodes) e) x
JOIN runs r USING (run_id)
WHERE w IS NOT NULL
GROUP BY r.system_name ORDER BY r.system_name
"""


def latency_summary(con_or_path: Any, *, parquet: bool = False, system: str | None = None) -> list[dict[str, Any]]:
    """One row per system: ``decisions`` with latency ``mean_s p50_s p95_s max_s`` and
    ``episodes`` with wall time ``mean_s max_s`` (null where no run recorded them; a
    system none of whose runs recorded either is absent).

    ``con_or_path``: a DuckDB connection, a corpus file, a runs folder or a snapshot
    (``parquet=True``).
    """
    con = con_or_path
    if not hasattr(con, "execute"):
        from labrecord.store import open_source

        con, _, _ = open_source(con_or_path, parquet=parquet)
    rows: dict[str, dict[str, Any]] = {}
    for name, decisions, mean, p50, p95, top in con.execute(LATENCY_SQL).fetchall():
        rows.setdefault(name, _empty(name))["latency"] = {"decisions": decisions, "mean_s": mean, "p50_s": p50,
                                                          "p95_s": p95, "max_s": top}
    for name, episodes, mean, top in con.execute(EPISODE_WALL_SQL).fetchall():
        rows.setdefault(name, _empty(name))["episode_wall"] = {"episodes": episodes, "mean_s": mean, "max_s": top}
    return [row for name, row in sorted(rows.items()) if system is None or name == system]


def _empty(name: str) -> dict[str, Any]:
    return {"system": name, "latency": None, "episode_wall": None}


def latency_rows(summary: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """Table rows (system, decisions, mean / p50 / p95 / max latency in ms, episodes, mean
    episode wall time in s) for text and HTML output."""
    def ms(value: Any) -> str:
        return "–" if value is None else f"{1000 * value:.2f}"

    out: list[tuple[str, ...]] = []
    for row in summary:
        lat = row["latency"] or {}
        wall = row["episode_wall"] or {}
        out.append((row["system"], str(lat.get("decisions", 0)), ms(lat.get("mean_s")), ms(lat.get("p50_s")),
                    ms(lat.get("p95_s")), ms(lat.get("max_s")), str(wall.get("episodes", 0)),
                    "–" if wall.get("mean_s") is None else f"{wall['mean_s']:.2f}"))
    return out


LATENCY_HEADER = ("system", "decisions", "mean ms", "p50 ms", "p95 ms", "max ms", "episodes", "episode wall s")
