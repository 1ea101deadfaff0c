"""Analysis of NetGauge results: DuckDB views, SQL questions, statistics, the report page
and the datasets users take away (`analysis.export`)."""

from pipeline.registry import BenchSpec

BENCHES = [BenchSpec("analysis", ".bench:bench", default=True)]
