"""The static report page: tables and matplotlib plots over the results.

    python -m analysis.report --grid default        # writes data/report/index.html
    snakemake --cores 4 report                       # the same, as a DAG target

`build_report` is the typed function behind both (the DAG calls it through
`python -m analysis report`).
"""

from analysis.report.build import build_report, report_dir

__all__ = ["build_report", "report_dir"]
